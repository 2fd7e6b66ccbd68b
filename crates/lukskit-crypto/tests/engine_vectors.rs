//! Known-answer tests of the sector engine against published vectors:
//!
//! * all 49 `cipher_iv_test_vectors` of cryptsetup's tests/crypto-vectors.c (AES-128-CBC over
//!   8192 zero bytes with the null/plain/plain64/plain64be/essiv:sha256/benbi/eboiv IV
//!   generators, sector sizes 512..4096, large IVs on and off; SHA-256 of the output);
//! * the full-sector IEEE P1619/D16 Annex B XTS-AES vectors 4, 5 and 6 (as carried by
//!   golang.org/x/crypto xts/xts_test.go), where the data-unit number is dm-crypt's plain64.

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use openssl::sha::sha256;

type Ctor = fn(&CipherSpec, &[u8], u32, bool) -> lukskit_crypto::Result<SectorCipher>;

/// Both engine builds: the fastest backend of this CPU and the portable Rust one.
const CTORS: [(&str, Ctor); 2] = [
    ("fast", SectorCipher::new),
    ("portable", SectorCipher::new_portable),
];

struct IvVector {
    iv_name: &'static str,
    iv_offset: u64,
    /// (sector size, large IV, SHA-256 of the ciphertext)
    out: [(u32, bool, &'static str); 7],
}

const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const IN_SHA256: &str = "9f1dcbc35c350d6027f98be0f5c8b43b42ca52b7604459c0c42be3aa88913d47";

const IV_VECTORS: [IvVector; 7] = [
    IvVector {
        iv_name: "null",
        iv_offset: u32::MAX as u64 - 7,
        out: [
            (
                512,
                false,
                "fd05d04d51b9d487a4579a620739c94a00903eafe8b2ac12caeb58f948f6ef08",
            ),
            (
                1024,
                false,
                "55875cde866a8bab08be5b381753dfe57eb95f59af07a4ca6a24d112a91525f4",
            ),
            (
                1024,
                true,
                "55875cde866a8bab08be5b381753dfe57eb95f59af07a4ca6a24d112a91525f4",
            ),
            (
                2048,
                false,
                "555b8e74909d0d4b748c167e29cfa9a3f3428b62da2d8cdac932c878e27ed270",
            ),
            (
                2048,
                true,
                "555b8e74909d0d4b748c167e29cfa9a3f3428b62da2d8cdac932c878e27ed270",
            ),
            (
                4096,
                false,
                "c645bae0403a96095e460d199d584b9378c53fa42e9eb019044b7326f4a6b5c3",
            ),
            (
                4096,
                true,
                "c645bae0403a96095e460d199d584b9378c53fa42e9eb019044b7326f4a6b5c3",
            ),
        ],
    },
    IvVector {
        iv_name: "plain",
        iv_offset: u32::MAX as u64 - 7,
        out: [
            (
                512,
                false,
                "43fd6e2580b213f5ca717918e41291e06e372432fd404b42cbc1721ac75a19c8",
            ),
            (
                1024,
                false,
                "18798dadf27b380327a5761907cd1262033657858850d06cf6dff1cfb8cf0177",
            ),
            (
                1024,
                true,
                "d021cfb27a01a894b28749c49f9cb23a7cc40d5008ea4dfb87e4498c1ad6ec16",
            ),
            (
                2048,
                false,
                "a48972b9cf780c2ac8204fd513cb753090d24afdd3b2e8f0d2b79d07bda97097",
            ),
            (
                2048,
                true,
                "2acf0757c8ea64c7d0d528e6d19ab57de4b963a2665a3d14bd27c709c03cd900",
            ),
            (
                4096,
                false,
                "121b00546e2d08c1158b1557c511308b633364a0d145d6cbdd49910429e69308",
            ),
            (
                4096,
                true,
                "44aaf1230c34322afae3f7957a7ca88b3478bd125cae4a65238a6f3a9605faae",
            ),
        ],
    },
    IvVector {
        iv_name: "plain64",
        iv_offset: u32::MAX as u64 - 7,
        out: [
            (
                512,
                false,
                "b3657e6cbae039cd1e1daf65aeb7da2025176a387579684c9a75c7fb2ba217d2",
            ),
            (
                1024,
                false,
                "0aa3237280d376338b2bae010399a5cacd95274027ec1490fd58b0089b9927e2",
            ),
            (
                1024,
                true,
                "d021cfb27a01a894b28749c49f9cb23a7cc40d5008ea4dfb87e4498c1ad6ec16",
            ),
            (
                2048,
                false,
                "6787ebede116850a3fb25cbc27619952fe64b9ab24dd2c1a2cffcd7e2e74b5d4",
            ),
            (
                2048,
                true,
                "2acf0757c8ea64c7d0d528e6d19ab57de4b963a2665a3d14bd27c709c03cd900",
            ),
            (
                4096,
                false,
                "b2f10e66d4584e93e798ae9c3ea7adf2931aaa3cc49012050058258f1f5dc667",
            ),
            (
                4096,
                true,
                "44aaf1230c34322afae3f7957a7ca88b3478bd125cae4a65238a6f3a9605faae",
            ),
        ],
    },
    IvVector {
        iv_name: "plain64be",
        iv_offset: u32::MAX as u64 - 7,
        out: [
            (
                512,
                false,
                "28bf09e168cc051b20af8d0136218a8d7a9498a899e9f466d8b799ca04588390",
            ),
            (
                1024,
                false,
                "9b74f7d55a6bb23ad209dd805928708f3a61f214c30da8d7d9cb5726738893d2",
            ),
            (
                1024,
                true,
                "36b568082955b9e901c1a8cf3e5b0028b6d135c5f70cf659b58fb9a200432948",
            ),
            (
                2048,
                false,
                "944fc8b4feaddc56f062008d520b2d58c005d61d4735c66a42ec98ee21747be5",
            ),
            (
                2048,
                true,
                "146baa2ff4a8243f4e92971aca1cbb46a708bbc595ac7381253433419571d9e7",
            ),
            (
                4096,
                false,
                "a8175d84c816067fa268dd1e7d6334937b452df4100b90fa148b7386bc094ae3",
            ),
            (
                4096,
                true,
                "e2c330d8a1b3a8ebdedcfe9be00b624e382fa1450e8f6cf04e88581713b51098",
            ),
        ],
    },
    IvVector {
        iv_name: "essiv:sha256",
        iv_offset: 0,
        out: [
            (
                512,
                false,
                "a53e74c41a5cf36b6349d5d9bb7a895ad53e766f4c2d0bd38b5e0e91a38c2ade",
            ),
            (
                1024,
                false,
                "416bc6752e9976a183ead597640e248c91170338e7d86664aad727502ad30be6",
            ),
            (
                1024,
                true,
                "023cbee61e9af314ab16ff6fb6a23e03a1bde9e4fa445b22c653e860581599ea",
            ),
            (
                2048,
                false,
                "84dc45d36103a851855beff8926b12062cfe753ecf28d18b4dcb889e31b00b92",
            ),
            (
                2048,
                true,
                "4b9de43ce24e7a13720248f87a7e15e83ac3920be830acb79ae0cff9b1f5615b",
            ),
            (
                4096,
                false,
                "bb1ba3a941bf17d87619088e3f50edfd571dd2c28a3201b9d98acc0da0658b6d",
            ),
            (
                4096,
                true,
                "a6dc7dc8c49b788172e9dd356c07eb7bd6569ee4dff5dd2e2c198f6358dba7d0",
            ),
        ],
    },
    IvVector {
        iv_name: "benbi",
        iv_offset: 0,
        out: [
            (
                512,
                false,
                "3ce394e36d685bdb5a8d71bfd3a668b91f330f97e2d6e8e2e1fc7e8028f173bd",
            ),
            (
                1024,
                false,
                "0f27a7ae319e71021216445fbbc6cb78d48449e0888504bf6dea607698340a7e",
            ),
            (
                1024,
                true,
                "3ef3088d3b204b5154de7f775bcf028b0eb0742e8e29fa5e86b4ab65185948b1",
            ),
            (
                2048,
                false,
                "b09ae5315f2e9d1304082a02713ddb5db2c9685bdcd138c296b33b72da9dcbe6",
            ),
            (
                2048,
                true,
                "6f34f0c1ea72e4dc919178b37cb09d4194f6b8ad05c40e49053190f056fe213f",
            ),
            (
                4096,
                false,
                "aa747dd673a777e17fb976f75ccfc0b7fa7bed15c2327c27bb35fcfe12ee142d",
            ),
            (
                4096,
                true,
                "711b3d26f44482721b7a650b378c945b1cd3302ff6cea42425eb9bb983e571bb",
            ),
        ],
    },
    IvVector {
        iv_name: "eboiv",
        iv_offset: 0,
        out: [
            (
                512,
                false,
                "044e929f7966fe931ba5b802fe7ef9267b6439e7b3cac46eca27a02fe2ea9116",
            ),
            (
                1024,
                false,
                "b04aa4b5d6457a86e9433dd601f7688ee6818d5055188e4bb6a789dfe24b94e2",
            ),
            (
                1024,
                true,
                "95084d4e89ab914eae565decf27813b182f7c8b503d6fab0e3f9c101c00c35a4",
            ),
            (
                2048,
                false,
                "d4001f2618d16dd5c4bf4a1330aed74b331ed5e8432d9584673904515f1f49e4",
            ),
            (
                2048,
                true,
                "898da2ec457ff0acfc70b636f089ca866bbf09d254a07cbc17d34eb8108a3f5d",
            ),
            (
                4096,
                false,
                "d1d74f709aa0222760db405a84ce892c4f9855d22dd1ea9e47ae8a83b590bb49",
            ),
            (
                4096,
                true,
                "dbe7d225b04f5d3620c4c2b4e87eaee99510455dddc4cd33adbd3949f285824c",
            ),
        ],
    },
];

#[test]
fn cryptsetup_cipher_iv_vectors() {
    let key = hex::decode(KEY).unwrap();
    let mut count = 0;
    for (ctor_name, ctor) in CTORS {
        for v in &IV_VECTORS {
            let spec = CipherSpec::parse(&format!("aes-cbc-{}", v.iv_name)).unwrap();
            for &(sector_size, large_iv, want) in &v.out {
                let c = ctor(&spec, &key, sector_size, large_iv).unwrap();
                let mut buf = vec![0u8; 8192];
                c.encrypt(&mut buf, v.iv_offset).unwrap();
                assert_eq!(
                    hex::encode(sha256(&buf)),
                    want,
                    "aes-cbc-{} sector {sector_size} large_iv {large_iv} ({ctor_name})",
                    v.iv_name
                );
                // The parallel path must give the same bytes.
                let mut par = vec![0u8; 8192];
                c.encrypt_parallel(&mut par, v.iv_offset).unwrap();
                assert_eq!(par, buf);
                c.decrypt(&mut buf, v.iv_offset).unwrap();
                assert_eq!(hex::encode(sha256(&buf)), IN_SHA256);
                count += 1;
            }
        }
    }
    assert_eq!(count, 2 * 49);
}

/// 0x00..0xff twice: the plaintext of IEEE 1619 vectors 4 and 6.
fn counting_512() -> Vec<u8> {
    (0..512u32).map(|i| i as u8).collect()
}

const IEEE4_KEY: &str = "2718281828459045235360287471352631415926535897932384626433832795";
const IEEE4_CT: &str = "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89cc78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad02655ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f4341332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56fd344b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb609ef4f79c203ebb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18deb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568";
const IEEE5_CT: &str = "264d3ca8512194fec312c8c9891f279fefdd608d0c027b60483a3fa811d65ee59d52d9e40ec5672d81532b38b6b089ce951f0f9c35590b8b978d175213f329bb1c2fd30f2f7f30492a61a532a79f51d36f5e31a7c9a12c286082ff7d2394d18f783e1a8e72c722caaaa52d8f065657d2631fd25bfd8e5baad6e527d763517501c68c5edc3cdd55435c532d7125c8614deed9adaa3acade5888b87bef641c4c994c8091b5bcd387f3963fb5bc37aa922fbfe3df4e5b915e6eb514717bdd2a74079a5073f5c4bfd46adf7d282e7a393a52579d11a028da4d9cd9c77124f9648ee383b1ac763930e7162a8d37f350b2f74b8472cf09902063c6b32e8c2d9290cefbd7346d1c779a0df50edcde4531da07b099c638e83a755944df2aef1aa31752fd323dcb710fb4bfbb9d22b925bc3577e1b8949e729a90bbafeacf7f7879e7b1147e28ba0bae940db795a61b15ecf4df8db07b824bb062802cc98a9545bb2aaeed77cb3fc6db15dcd7d80d7d5bc406c4970a3478ada8899b329198eb61c193fb6275aa8ca340344a75a862aebe92eee1ce032fd950b47d7704a3876923b4ad62844bf4a09c4dbe8b4397184b7471360c9564880aedddb9baa4af2e75394b08cd32ff479c57a07d3eab5d54de5f9738b8d27f27a9f0ab11799d7b7ffefb2704c95c6ad12c39f1e867a4b7b1d7818a4b753dfd2a89ccb45e001a03a867b187f225dd";
const IEEE6_KEY: &str = "27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592";
const IEEE6_CT: &str = "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed43851ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151";

#[test]
fn ieee1619_xts_aes_full_sectors() {
    for (_, ctor) in CTORS {
        ieee1619_with(ctor);
    }
}

fn ieee1619_with(ctor: Ctor) {
    let spec = CipherSpec::parse("aes-xts-plain64").unwrap();

    // Vectors 4 and 5 share the key; 5 encrypts 4's ciphertext as data unit 1, so one
    // two-sector call starting at sector 0 covers both.
    let c = ctor(&spec, &hex::decode(IEEE4_KEY).unwrap(), 512, false).unwrap();
    let ct4 = hex::decode(IEEE4_CT).unwrap();
    let ct5 = hex::decode(IEEE5_CT).unwrap();
    let mut buf = [counting_512(), ct4.clone()].concat();
    c.encrypt(&mut buf, 0).unwrap();
    assert_eq!(hex::encode(&buf[..512]), IEEE4_CT);
    assert_eq!(hex::encode(&buf[512..]), IEEE5_CT);
    c.decrypt(&mut buf, 0).unwrap();
    assert_eq!(buf, [counting_512(), ct4].concat());
    let mut one = ct5.clone();
    c.decrypt(&mut one, 1).unwrap();
    assert_eq!(hex::encode(&one), IEEE4_CT);

    // Vector 6: XTS-AES-256, data unit 0xff.
    let c = ctor(&spec, &hex::decode(IEEE6_KEY).unwrap(), 512, false).unwrap();
    let mut buf = counting_512();
    c.encrypt(&mut buf, 0xff).unwrap();
    assert_eq!(hex::encode(&buf), IEEE6_CT);
    c.decrypt(&mut buf, 0xff).unwrap();
    assert_eq!(buf, counting_512());
}

//! The files at both ends of a conversion: the data area of a new image written from a
//! plaintext stream (sized, written through the [`pipeline`](super::pipeline), made durable),
//! and a data area decrypted into a plaintext file or block device (a new file with holes,
//! renamed into place once complete).
//!
//! The image's header is made (or, in plain mode, its layout chosen) and the volume unlocked
//! before: by the caller, with [`crate::format`], [`crate::Volume`] or [`crate::plain`].

use super::pipeline::{decrypt_stream, encrypt_stream, Sink};
use super::staging::{is_block_device, PlainOutput};
use super::ImageError;
use crate::data::{DataLayout, DataVolume, Threads};
use lukskit_format::io::Storage;
use std::fs::OpenOptions;
use std::io::Read;

/// The data area of a new image, once its header is written (or its plain layout chosen):
/// what [`write_image_data`] fills.
pub struct ImageData<'a> {
    /// The file or block device written: the staged image
    /// ([`PendingImage::image`](super::staging::PendingImage::image)).
    pub path: &'a str,
    /// The image's name in messages (the name it will have).
    pub name: &'a str,
    /// Where its data area is and how it is encrypted; a `size` fixes the data area's length.
    pub layout: DataLayout,
    /// The volume key.
    pub key: &'a [u8],
    /// The length of the plaintext when it is known (a file), `None` for a stream.
    pub plain_len: Option<u64>,
    /// Engine workers of the pipeline.
    pub workers: usize,
}

/// Write the plaintext `input` (called `input_name` in errors) into the data area of
/// `image`, and make it durable.
///
/// A regular file is sized first: the data offset plus the plaintext rounded up to a whole
/// encryption sector (or the layout's fixed size); from a stream of unknown length it ends
/// after the last sector written. A block device must be large enough and is written only as
/// far as the plaintext needs. `interrupted` is asked before each chunk (true: stop with
/// [`ImageError::Interrupted`]); `progress` is told of each chunk written. Returns the number
/// of plaintext bytes.
pub fn write_image_data(
    image: ImageData<'_>,
    input: Box<dyn Read + Send>,
    input_name: &str,
    interrupted: fn() -> bool,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, ImageError> {
    let ImageData {
        path,
        name,
        mut layout,
        key,
        plain_len,
        workers,
    } = image;
    let ss = u64::from(layout.sector_size);
    let data_len = match (plain_len, layout.size) {
        (Some(plain), Some(fixed)) if plain > fixed => {
            return Err(ImageError::PlaintextTooLarge { plain, fixed })
        }
        (_, Some(fixed)) => Some(fixed),
        (Some(plain), None) => Some(plain.div_ceil(ss) * ss),
        (None, None) => None,
    };
    if interrupted() {
        return Err(ImageError::Interrupted);
    }
    let out = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| ImageError::io("Opening", name, e))?;
    let block = is_block_device(path);
    match data_len {
        Some(len) => {
            let need = layout.offset + len;
            let have = Storage::size(&out).map_err(|e| ImageError::io("Reading", name, e))?;
            if block && have < need {
                return Err(ImageError::DeviceTooSmall {
                    path: name.to_string(),
                    have,
                    need,
                });
            }
            if !block {
                out.set_len(need)
                    .map_err(|e| ImageError::io("Resizing", name, e))?;
            }
        }
        None if !block => out
            .set_len(layout.offset)
            .map_err(|e| ImageError::io("Resizing", name, e))?,
        None => {}
    }
    // A block device may be larger than the data: only what the plaintext needs is used.
    if block && layout.size.is_none() {
        layout.size = data_len;
    }
    let offset = layout.offset;
    let mut dv = DataVolume::from_file(out, path, layout, key, true)?;
    // Parallelism comes from the pipeline (whole chunks per worker).
    dv.set_threads(Threads::Fixed(1));
    let written = encrypt_stream(input, input_name, &dv, workers, interrupted, progress)?;
    if data_len.is_none() && !block {
        // A stream: the image ends after the last sector written.
        if let Some(f) = dv.file() {
            f.set_len(offset + written.div_ceil(ss) * ss)
                .map_err(|e| ImageError::io("Resizing", name, e))?;
        }
    }
    dv.flush()?;
    Ok(written)
}

/// Decrypt the whole data area of `dv` (continuing through `upper`, the further tables of a
/// stacked volume) into the file or block device `path`.
///
/// A regular file is written as a new file beside it, with holes for blocks of zeros, and
/// renamed into place once complete and durable; a block device must be large enough.
/// `progress` is told of each chunk written. Returns the number of bytes written.
pub fn decrypt_to_path(
    dv: &mut DataVolume,
    upper: &[DataVolume],
    path: &str,
    workers: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, ImageError> {
    // Parallelism comes from the pipeline (whole chunks per worker).
    dv.set_threads(Threads::Fixed(1));
    let total = dv.size();
    let out = PlainOutput::open(path)?;
    let sparse = out.is_replacement();
    let file = out.file();
    if is_block_device(path) {
        let have = Storage::size(file).map_err(|e| ImageError::io("Reading", path, e))?;
        if have < total {
            return Err(ImageError::DeviceTooSmall {
                path: path.to_string(),
                have,
                need: total,
            });
        }
    }
    decrypt_stream(
        dv,
        upper,
        total,
        Sink::File { file, sparse },
        path,
        workers,
        progress,
    )?;
    if sparse {
        file.set_len(total)
            .map_err(|e| ImageError::io("Resizing", path, e))?;
    }
    out.commit(path)?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> bool {
        false
    }

    fn always() -> bool {
        true
    }

    fn layout(size: Option<u64>) -> DataLayout {
        DataLayout {
            cipher: "aes-xts-plain64".into(),
            offset: 4096,
            size,
            sector_size: 512,
            iv_offset: 0,
            iv_large_sectors: false,
        }
    }

    fn write(
        path: &str,
        layout: DataLayout,
        plain: &[u8],
        known_len: bool,
        interrupted: fn() -> bool,
    ) -> Result<u64, ImageError> {
        let key = [7u8; 64];
        write_image_data(
            ImageData {
                path,
                name: "img",
                layout,
                key: &key,
                plain_len: known_len.then_some(plain.len() as u64),
                workers: 2,
            },
            Box::new(std::io::Cursor::new(plain.to_vec())),
            "plaintext",
            interrupted,
            &mut |_| {},
        )
    }

    #[test]
    fn a_file_image_is_sized_to_whole_sectors_and_decrypts_back() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("img");
        let plain: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8 + 1).collect();
        for known in [true, false] {
            std::fs::write(&img, []).unwrap();
            let p = img.to_str().unwrap();
            assert_eq!(
                write(p, layout(None), &plain, known, never).unwrap(),
                70_000
            );
            // 70,000 bytes are 137 sectors of 512 (70,144 bytes) after the 4 KiB offset.
            assert_eq!(std::fs::metadata(&img).unwrap().len(), 4096 + 70_144);
            let key = [7u8; 64];
            let mut dv = DataVolume::open(p, layout(None), &key, false).unwrap();
            let out = dir.path().join("plain");
            let o = out.to_str().unwrap();
            assert_eq!(
                decrypt_to_path(&mut dv, &[], o, 2, &mut |_| {}).unwrap(),
                70_144
            );
            let back = std::fs::read(&out).unwrap();
            assert_eq!(&back[..70_000], &plain[..]);
            assert!(back[70_000..].iter().all(|b| *b == 0));
        }
    }

    /// 2000 bytes written into a new empty image that must refuse them: the error, and the
    /// image's length after it.
    fn refused(layout: DataLayout, interrupted: fn() -> bool) -> (ImageError, u64) {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("img");
        std::fs::write(&img, []).unwrap();
        let e = write(img.to_str().unwrap(), layout, &[1; 2000], true, interrupted).unwrap_err();
        (e, std::fs::metadata(&img).unwrap().len())
    }

    #[test]
    fn a_plaintext_larger_than_the_fixed_size_is_refused_before_anything_is_written() {
        let (e, len) = refused(layout(Some(1024)), never);
        assert_eq!(
            e.to_string(),
            "The plaintext (2000 bytes) does not fit the requested data size (1024 bytes)."
        );
        assert!(matches!(e, ImageError::PlaintextTooLarge { .. }), "{e:?}");
        assert_eq!(len, 0);
    }

    #[test]
    fn an_interrupt_stops_before_the_image_is_sized() {
        let (e, len) = refused(layout(None), always);
        assert!(matches!(e, ImageError::Interrupted), "{e:?}");
        assert_eq!(len, 0);
    }
}

#!/bin/sh
# Create a small X.509 PKI for NBD over TLS in qemu-nbd's and nbdkit's directory layout:
#   DIR/ca-cert.pem DIR/ca-key.pem DIR/server-cert.pem DIR/server-key.pem
#   DIR/client-cert.pem DIR/client-key.pem
# The server certificate is valid for the names given after DIR (default: localhost and
# 127.0.0.1 and ::1). Uses GnuTLS's certtool (Debian: gnutls-bin), as the qemu and nbdkit
# documentation do. For tests and trials; a real deployment has its own CA.
set -eu
dir=${1:?usage: nbd-tls-certs.sh DIR [NAME...]}
shift
[ $# -gt 0 ] || set -- localhost 127.0.0.1 ::1
mkdir -p "$dir"
cd "$dir"
umask 077
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
certtool --generate-privkey --key-type=rsa --bits=2048 --outfile ca-key.pem >/dev/null 2>&1
cat > "$tmp/ca.info" <<INFO
cn = lukskit NBD test CA
ca
cert_signing_key
expiration_days = 3650
INFO
certtool --generate-self-signed --load-privkey ca-key.pem --template "$tmp/ca.info" \
    --outfile ca-cert.pem >/dev/null 2>&1
{
    echo "organization = lukskit"
    echo "cn = $1"
    for n in "$@"; do
        case $n in
        *:* | [0-9]*.[0-9]*.[0-9]*.[0-9]*) echo "ip_address = $n" ;;
        *) echo "dns_name = $n" ;;
        esac
    done
    echo "tls_www_server"
    echo "signing_key"
    echo "encryption_key"
    echo "expiration_days = 3650"
} > "$tmp/server.info"
certtool --generate-privkey --key-type=rsa --bits=2048 --outfile server-key.pem >/dev/null 2>&1
certtool --generate-certificate --load-privkey server-key.pem --load-ca-certificate ca-cert.pem \
    --load-ca-privkey ca-key.pem --template "$tmp/server.info" --outfile server-cert.pem >/dev/null 2>&1
cat > "$tmp/client.info" <<INFO
organization = lukskit
cn = lukskit NBD client
tls_www_client
signing_key
encryption_key
expiration_days = 3650
INFO
certtool --generate-privkey --key-type=rsa --bits=2048 --outfile client-key.pem >/dev/null 2>&1
certtool --generate-certificate --load-privkey client-key.pem --load-ca-certificate ca-cert.pem \
    --load-ca-privkey ca-key.pem --template "$tmp/client.info" --outfile client-cert.pem >/dev/null 2>&1
chmod 0644 ca-cert.pem server-cert.pem client-cert.pem

#!/bin/sh
# Run in the reference VM by crates/lukskit-cli/tests/refvm_segments.rs. Disks: /dev/vda the
# data device lukskit wrote through its userspace data path, /dev/vdb a blank disk for what
# the kernel reads, /dev/vdc the plaintext the kernel writes. /refvm/files/table.txt: the dm
# table lukskit rendered from the same segment table, with the data device as 4095:4095.
export DM_DISABLE_UDEV=1
set -e
majmin=$(cat /sys/block/vda/dev)
sed "s/4095:4095/$majmin/g" /refvm/files/table.txt > /tmp/table
dmsetup create segt < /tmp/table
# The table as the kernel reports it, device normalised back.
dmsetup table --showkeys segt | sed "s/ $majmin / 4095:4095 /" | sed 's/^/table: /'
mm=$(dmsetup info -c --noheadings --separator : -o major,minor segt | tr -d ' ')
echo "sectors: $(cat "/sys/dev/block/$mm/size")"
# The kernel reads what lukskit wrote ...
dd if=/dev/mapper/segt of=/dev/vdb bs=64k iflag=direct oflag=direct 2>/dev/null
# ... and writes what lukskit then reads.
dd if=/dev/vdc of=/dev/mapper/segt bs=64k iflag=direct oflag=direct conv=fsync 2>/dev/null
dmsetup remove segt
sync
echo "segments: done"

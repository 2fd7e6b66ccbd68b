#!/bin/sh
# lukskit (dracut cmdline hook): the boot table from the image's crypttab and rd.luks.*.
/sbin/lukskit-dracut parse

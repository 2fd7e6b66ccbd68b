#!/bin/sh
# lukskit (dracut emergency hook): which volumes were not unlocked, and why.
/sbin/lukskit-dracut emergency

#!/bin/sh
# What braid's node image leaves out of the Debian root filesystem at "$1" that mmdebstrap
# made, beyond the dpkg path excludes of build.sh (documentation but the copyright files, man
# and info pages, translations, lintian overrides, reportbug scripts); build.sh runs it after
# mmdebstrap. Part of the base's cache key: editing this file rebuilds the base.
set -eu
root=$1

# Copied from the build machine by mmdebstrap; the container runtime mounts its own.
rm -f "$root/etc/hostname" "$root/etc/resolv.conf" "$root/etc/hosts"

# apt is not installed (variant essential): the sources, lists and caches mmdebstrap used
# are left-overs of the build.
rm -f "$root/etc/apt/sources.list"
# mmdebstrap's --aptopt file (build.sh gives one for a snapshot mirror): the image built from a
# snapshot is then the one built from the live mirror at that time.
rm -f "$root/etc/apt/apt.conf.d/99mmdebstrap"
rm -rf "$root/var/lib/apt" "$root/var/cache/apt"

# Logs of the build, dpkg's and debconf's backups, ldconfig's auxiliary cache.
find "$root/var/log" -mindepth 1 -delete
rm -f "$root"/var/lib/dpkg/*-old "$root"/var/cache/debconf/*-old
rm -f "$root/var/cache/ldconfig/aux-cache"
rm -f "$root/usr/share/info/dir" # install-info's index of the excluded manuals
# What dpkg's path-exclude left of the documentation: directories without their files.
find "$root/usr/share/doc" -depth -mindepth 1 -type d -empty -delete

# Debian compiles its Python modules at install time, in the mode that checks each source's
# mtime; the image's timestamps are clamped, so compile them again in the mode that checks
# nothing: the interpreter then never finds a stale file and never writes one at start-up.
find "$root/usr/lib/python3.11" "$root/usr/lib/python3" "$root/usr/share/python3" \
    -name __pycache__ -type d -prune -exec rm -rf {} +
chroot "$root" /usr/bin/python3 -m compileall -q --invalidation-mode unchecked-hash \
    /usr/lib/python3.11 /usr/lib/python3/dist-packages /usr/share/python3 >/dev/null

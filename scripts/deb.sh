#!/usr/bin/env bash
# Builds the Debian package of boxcar with dpkg-deb (no debhelper: the
# layout is small and spelled out here):
#   scripts/deb.sh BUILD_DIR VERSION   ->  BUILD_DIR/deb/boxcar_VERSION_ARCH.deb
# BUILD_DIR must hold boxcar, boxcar-sandbox, boxcar-session-agent and boxcar-guard (make).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 version=$2
arch=$(dpkg --print-architecture)
out="$build/deb"
root="$out/root"
rm -rf "$out"
mkdir -p "$root/DEBIAN"

# Reproducible: every timestamp is the commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

d() { install -d -m 0755 "$root/$1"; }
d usr/bin; d lib/systemd/system; d etc/boxcar; d usr/lib/modules-load.d
d usr/share/doc/boxcar; d usr/share/man/man1; d usr/share/lintian/overrides

for b in boxcar boxcar-sandbox boxcar-session-agent boxcar-guard; do
  install -m 0755 "$build/$b" "$root/usr/bin/$b"
  # What dh_strip does: no debug sections, no .comment/.note.
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/$b"
done
install -m 0644 deploy/boxcar-worker.service "$root/lib/systemd/system/"
install -m 0644 deploy/worker.conf "$root/etc/boxcar/worker.conf"
# Secrets: root only.
install -m 0600 deploy/worker.env "$root/etc/boxcar/worker.env"
install -m 0644 deploy/modules-load.conf "$root/usr/lib/modules-load.d/boxcar.conf"
install -m 0644 deploy/debian/copyright "$root/usr/share/doc/boxcar/copyright"
install -m 0644 deploy/debian/lintian-overrides "$root/usr/share/lintian/overrides/boxcar"
for f in README.md deploy/README.md docs/job-spec.md docs/sessions.md; do
  name=$(basename "$f"); [[ $f == deploy/* ]] && name=deploy.md
  gzip -9nc "$f" > "$root/usr/share/doc/boxcar/$name.gz"
done
chmod 0644 "$root"/usr/share/doc/boxcar/*.gz
install -m 0644 docs/job-spec.schema.json "$root/usr/share/doc/boxcar/"
{
  printf 'boxcar (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Built from commit %s by make deb.\n\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf ' -- boxcar developers <boxcar@example.org>  %s\n' "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$root/usr/share/doc/boxcar/changelog.gz"

scripts/man.sh "$build" "$out/man" "$version"
for m in "$out"/man/*.1; do
  gzip -9nc "$m" > "$root/usr/share/man/man1/$(basename "$m").gz"
  chmod 0644 "$root/usr/share/man/man1/$(basename "$m").gz"
done

# Library dependencies as dpkg-shlibdeps finds them (it wants a
# debian/control beside it).
mkdir -p "$out/src/debian"
printf 'Source: boxcar\n\nPackage: boxcar\nArchitecture: any\n' > "$out/src/debian/control"
shlibs=$(cd "$out/src" && dpkg-shlibdeps -O "$OLDPWD/$root/usr/bin/boxcar" \
           "$OLDPWD/$root/usr/bin/boxcar-sandbox" "$OLDPWD/$root/usr/bin/boxcar-session-agent" \
           "$OLDPWD/$root/usr/bin/boxcar-guard" 2>/dev/null |
         sed -n 's/^shlibs:Depends=//p')
[[ -n $shlibs ]] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: boxcar
Version: $version
Architecture: $arch
Maintainer: boxcar developers <boxcar@example.org>
Installed-Size: $size
Depends: $shlibs, e2fsprogs
Suggests: postgresql (>= 15)
Section: admin
Priority: optional
Description: job-queue worker running jobs from PostgreSQL in sandboxes
 boxcar takes jobs from a PostgreSQL queue (FOR UPDATE SKIP LOCKED, leases,
 LISTEN/NOTIFY), runs each in a Linux sandbox (namespaces, seccomp, cgroup
 limits, a size-limited ext4 workspace), keeps volumes and artifacts in S3
 and posts results as signed webhooks.
 .
 This package ships the boxcar command, its sandbox helper, the
 boxcar-worker systemd unit (Type=notify, Delegate=yes), and a commented
 configuration in /etc/boxcar.  Run "boxcar migrate" before the workers.
CONTROL
printf '/etc/boxcar/worker.conf\n/etc/boxcar/worker.env\n' > "$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "deploy/debian/$s" "$root/DEBIAN/$s"
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
   xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

deb="$out/boxcar_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"

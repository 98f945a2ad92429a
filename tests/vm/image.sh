#!/usr/bin/env bash
# Builds what the cgroup v2 VM suite boots, under $BOXCAR_DEV/vm/<kernel
# package>/: Debian's stock kernel (the package linux-image-amd64 depends
# on, downloaded and unpacked, never installed on this host) and a small
# initramfs: busybox-static, tests/vm/init, and the modules it loads to
# reach the host's root over 9p (virtio, 9p) and for the tests (loop, ext4,
# overlay, veth).  Prints the directory.  Built once per kernel version.
set -euo pipefail
source "$(dirname "$0")/../../scripts/env.sh"
vm="$BOXCAR_DEV/vm"
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[[ -n $pkg ]] || { echo "vm: cannot tell which kernel package linux-image-amd64 depends on (apt-get update?)" >&2; exit 1; }
# Rebuilt when the kernel package, tests/vm/init or this script changes.
recipe=$(cat "$BOXCAR_ROOT/tests/vm/init" "$0" | sha256sum | cut -c1-12)
out="$vm/$pkg-$recipe"
if [[ -s $out/initrd.gz && -s $out/vmlinuz ]]; then echo "$out"; exit 0; fi

rm -rf "$out.tmp" && mkdir -p "$out.tmp/dl" && cd "$out.tmp/dl"
# apt-get download as root warns that _apt cannot write here; harmless.
apt-get download "$pkg" >/dev/null 2>&1 || { echo "vm: apt-get download $pkg failed" >&2; exit 1; }
dpkg-deb -x ./*.deb ../unpacked
cd ..
kver=${pkg#linux-image-}
moddir=unpacked/lib/modules/$kver
cp "unpacked/boot/vmlinuz-$kver" vmlinuz

# Module name -> file, then each wanted module after its dependencies
# (modinfo's depends= field, read from the .ko: no kmod on the host).
declare -A path=() done=()
while IFS= read -r f; do b=${f##*/}; b=${b%.ko}; path[${b//-/_}]=$f; done < <(find "$moddir" -name '*.ko')
order=()
add() {
  local m=${1//-/_} d
  [[ -n ${done[$m]:-} ]] && return 0
  [[ -n ${path[$m]:-} ]] || { echo "vm: module $m not in $pkg" >&2; exit 1; }
  done[$m]=1
  for d in $(strings -a "${path[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do add "$d"; done
  order+=("$m")
}
for m in virtio_pci virtio_rng 9pnet_virtio 9p loop crc32c_generic ext4 overlay veth; do add "$m"; done

rd=initrd
mkdir -p "$rd/bin" "$rd/lib/modules" "$rd/proc" "$rd/sys" "$rd/dev" "$rd/newroot"
cp /bin/busybox "$rd/bin/busybox"
cp "$BOXCAR_ROOT/tests/vm/init" "$rd/init" && chmod 755 "$rd/init"
for m in "${order[@]}"; do cp "${path[$m]}" "$rd/lib/modules/$m.ko"; done
printf '%s\n' "${order[@]}" > "$rd/modules.order"
(cd "$rd" && find . | cpio -o -H newc --quiet | gzip -1) > initrd.gz
rm -rf dl unpacked "$rd"
for old in "$vm/$pkg"-*; do [[ $old == "$out.tmp" ]] || rm -rf "$old"; done
mv "$out.tmp" "$out"
echo "$out"

# Sourced by the bench/malloc scripts: fills `lib` (allocator name -> the
# library to preload; glibc's is empty) with the Debian builds of jemalloc,
# mimalloc and tcmalloc, installing their packages when missing, then adds
# EXTRA="name=/path/lib.so ..." and, when `allocators` names keel, builds
# keel-malloc in release. Expects `root` (the repository) and `allocators`.
libdir=/usr/lib/x86_64-linux-gnu
declare -A lib=(
  [glibc]=""
  [jemalloc]="$libdir/libjemalloc.so.2"
  [mimalloc]="$libdir/libmimalloc.so.2"
  [tcmalloc]="$libdir/libtcmalloc_minimal.so.4"
)
# apt_install PACKAGE...: installs with apt-get (as root or through sudo).
apt_install() {
  local sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  echo "installing $*" >&2
  $sudo_cmd apt-get install -y "$@" >&2 ||
    { $sudo_cmd apt-get update >&2 && $sudo_cmd apt-get install -y "$@" >&2; }
}
missing=()
[ -e "${lib[jemalloc]}" ] || missing+=(libjemalloc2)
[ -e "${lib[mimalloc]}" ] || missing+=(libmimalloc2.0)
[ -e "${lib[tcmalloc]}" ] || missing+=(libtcmalloc-minimal4)
[ -x /usr/bin/time ] || missing+=(time)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
for e in ${EXTRA:-}; do
  lib[${e%%=*}]=${e#*=}
  [ -e "${e#*=}" ] || { echo "${e#*=} does not exist" >&2; exit 1; }
done
if [[ " ${allocators[*]} " == *" keel "* ]]; then
  echo "building keel-malloc (release)" >&2
  cargo build --release -p keel-malloc >&2
  lib[keel]="${CARGO_TARGET_DIR:-$root/target}/release/libkeel_malloc.so"
  [ -e "${lib[keel]}" ] || { echo "${lib[keel]} was not built" >&2; exit 1; }
fi

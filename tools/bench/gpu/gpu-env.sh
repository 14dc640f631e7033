# Sourced by run.sh and by the stack pack's run-stack.sh: makes the GPU pack's folder (the one
# tools/bench/gpu/pack.sh wrote, where this file sits) ready to run Dawn on the NVIDIA driver.
# Puts the carried Node.js (node.xz, unpacked into bin/; the bundles target the project's Node 24,
# which a machine's own node may predate) first on PATH; unpacks Dawn's dawn.node.xz, the
# bundles and the wasm binaries beside themselves; uses the machine's Vulkan loader, or else the
# carried libvulkan1 .deb unpacked here (dpkg -x). Unless VK_DRIVER_FILES is set, points the
# loader at the NVIDIA driver through its EGL library (an ICD file written here), which needs no
# display; where the driver has no EGL library, at its nvidia_icd.json, which names the GLX
# library: in a headless container that one can fail with "Could not get 'vkCreateInstance'
# via 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0", and the run then finds no adapter.
GPU_PACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Writes the xz file $1 unpacked to stdout: with xz, or with python3's lzma where xz is missing.
unxz_to_stdout() {
  if command -v xz >/dev/null; then
    xz -dc "$1"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  fi
}
# Unpacks the xz file $1 to $2 (mode $3) unless $2 exists; whole or not at all, so that a run cut
# short leaves nothing a later run would take for the file.
unxz_once() {
  [ -e "$2" ] && return 0
  unxz_to_stdout "$1" >"$2.part" && chmod "$3" "$2.part" && mv "$2.part" "$2"
}
# Whether the dynamic loader finds library $1: in its cache or on LD_LIBRARY_PATH.
has_library() {
  ldconfig -p 2>/dev/null | awk -v lib="$1" '$1 == lib { found = 1 } END { exit !found }' && return 0
  local dir
  for dir in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do [ -e "$dir/$1" ] && return 0; done
  return 1
}
mkdir -p "$GPU_PACK/bin"
unxz_once "$GPU_PACK/node.xz" "$GPU_PACK/bin/node" 755
export PATH="$GPU_PACK/bin:$PATH"
dawn="$GPU_PACK/node_modules/webgpu/dist/linux-x64/dawn.node"
unxz_once "$dawn.xz" "$dawn" 644
for packed in "$GPU_PACK"/*.js.xz "$GPU_PACK"/*.wasm.xz; do
  [ -e "$packed" ] && unxz_once "$packed" "${packed%.xz}" 644
done
if ! has_library libvulkan.so.1; then
  [ -d "$GPU_PACK/vulkan" ] || dpkg -x "$GPU_PACK"/libvulkan1_*.deb "$GPU_PACK/vulkan"
  export LD_LIBRARY_PATH="$GPU_PACK/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(find /usr/share/vulkan /etc/vulkan /usr/local /opt /usr/lib/x86_64-linux-gnu -name nvidia_icd.json 2>/dev/null | head -n 1 || true)
  if has_library libEGL_nvidia.so.0; then
    api=$(sed -n 's/.*"api_version" *: *"\([0-9.]*\)".*/\1/p' "${icd:-/dev/null}" | head -n 1)
    icd="$GPU_PACK/nvidia_egl_icd.json"
    printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "libEGL_nvidia.so.0", "api_version": "%s"}}\n' "${api:-1.3.0}" >"$icd"
  fi
  if [ -n "$icd" ]; then export VK_DRIVER_FILES="$icd"; fi
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

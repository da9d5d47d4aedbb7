/* fuzz/stb_image_impl.c: FUZZ BUILD ONLY. The library links Debian's prebuilt libstb; for fuzzing we
 * compile stb_image from the same header with the sanitizers and coverage, so that libFuzzer can
 * steer into the decoders and ASan sees their memory accesses. Never part of libattncap. */
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

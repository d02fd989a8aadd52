// tkc-emu: the 16- and 8-bit float types live in tkc_emu_floats.h.
#pragma once
#include "tkc_emu_floats.h"

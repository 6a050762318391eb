// libzcal 1.1's guard, renamed (old_guard.c).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "zcal/zcal.h"

extern "C" {
int old_zcal_guard_init_key(struct zcal_guard* guard, size_t guard_size, zcal_handle* handle,
                            const struct zcal_key* key, uint8_t method, int fallback,
                            uint64_t max_age_ns);
int old_zcal_guard_should_zerocopy(struct zcal_guard* guard, uint64_t size_bytes);
int old_zcal_guard_completed(struct zcal_guard* guard, uint64_t completions, uint64_t copied);
}

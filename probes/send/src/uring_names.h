// io_uring names that liburing 2.3's bundled <liburing/io_uring.h> lacks.
// The kernel's <linux/io_uring.h> has them, but it cannot be included next
// to liburing's copy (both define the same structs), so they are defined
// here, once, with the kernel's values (Linux 6.2, include/uapi).
#pragma once

#include <liburing.h>

#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#ifndef NOTESD_CCMARKGFM_SHIM_H
#define NOTESD_CCMARKGFM_SHIM_H
#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>
#include <stdlib.h>

/// cmark's option flags are macros of shifted values, which Swift imports only as plain ints
/// where it can; these spell the ones notesd uses as one value.
static inline int notesd_cmark_options(void) {
    return CMARK_OPT_UNSAFE | CMARK_OPT_NOBREAKS | CMARK_OPT_VALIDATE_UTF8;
}
#endif

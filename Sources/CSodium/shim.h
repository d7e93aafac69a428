#ifndef NOTESD_CSODIUM_SHIM_H
#define NOTESD_CSODIUM_SHIM_H
#include <sodium.h>
#endif

#ifndef NOTESD_CYAML_SHIM_H
#define NOTESD_CYAML_SHIM_H
#include <yaml.h>
#endif

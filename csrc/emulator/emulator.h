/* emulator.h - the emulator layer: a second implementation of the driver entry points
 * that runs PTX on the CPU (see csrc/emulator/emu.h for its insides) */
#ifndef CUKIT_EMULATOR_H
#define CUKIT_EMULATOR_H

#include "driver/driver.h"

/* Write the emulator's functions into every driver entry of api (the optional pool
 * entries become NULL: the emulator has no stream-ordered pool). Returns 0. */
int cukit_emulator_fill(cukit_api_t *api);
/* Register cukit_emulator_fill with the loader, which calls it when the backend is
 * the emulator. 0. */
int cukit_emulator_setup(PyObject *module, cukit_state *st);

#endif /* CUKIT_EMULATOR_H */

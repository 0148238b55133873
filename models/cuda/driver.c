/* models/cuda/driver.c: the driver entry points of driver.h, looked up once. */
#include <pthread.h>
#include <stdbool.h>

#include "driver.h"

static struct sp_cu_driver g_driver;
static bool g_found;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static bool lookup(const char *name, unsigned version, void **fn) {
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    return cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q) ==
               cudaSuccess &&
           q == cudaDriverEntryPointSuccess && *fn;
}

static void find_all(void) {
    struct sp_cu_driver *d = &g_driver;
    g_found =
        lookup("cuDeviceGet", 2000, (void **)&d->DeviceGet) &&
        lookup("cuCtxSetCurrent", 4000, (void **)&d->CtxSetCurrent) &&
        lookup("cuDeviceGetDevResource", 12040, (void **)&d->DeviceGetDevResource) &&
        lookup("cuDevSmResourceSplitByCount", 12040, (void **)&d->DevSmResourceSplitByCount) &&
        lookup("cuDevResourceGenerateDesc", 12040, (void **)&d->DevResourceGenerateDesc) &&
        lookup("cuGreenCtxCreate", 12040, (void **)&d->GreenCtxCreate) &&
        lookup("cuGreenCtxDestroy", 12040, (void **)&d->GreenCtxDestroy) &&
        lookup("cuCtxFromGreenCtx", 12040, (void **)&d->CtxFromGreenCtx) &&
        lookup("cuGreenCtxStreamCreate", 12050, (void **)&d->GreenCtxStreamCreate);
}

const struct sp_cu_driver *sp_cu_driver(void) {
    pthread_once(&g_once, find_all);
    return g_found ? &g_driver : NULL;
}

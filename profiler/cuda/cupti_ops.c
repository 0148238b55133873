/* profiler/cuda/cupti_ops.c: the table of real CUPTI entry points. */
#include "cupti_ops.h"

const struct sp_cupti_ops sp_cupti_real_ops = {
    cuptiGetVersion,
    cuptiGetTimestamp,
    cuptiGetResultString,
    cuptiActivitySetAttribute,
    cuptiActivityRegisterCallbacks,
    cuptiActivityEnable,
    cuptiActivityGetNextRecord,
    cuptiActivityGetNumDroppedRecords,
    cuptiActivityFlushAll,
    cuptiActivityPushExternalCorrelationId,
    cuptiActivityPopExternalCorrelationId,
};

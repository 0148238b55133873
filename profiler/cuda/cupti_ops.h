/* profiler/cuda/cupti_ops.h: every CUPTI call the collector makes, through one table, so the
 * tests can put a fake behind it (a CUPTI that fails where they say) while the real table points
 * straight at libcupti. */
#ifndef SP_PROFILER_CUPTI_OPS_H
#define SP_PROFILER_CUPTI_OPS_H

#include <cupti.h>

struct sp_cupti_ops {
    CUptiResult (*get_version)(uint32_t *version);
    CUptiResult (*get_timestamp)(uint64_t *ns);
    CUptiResult (*get_result_string)(CUptiResult result, const char **str);
    CUptiResult (*set_attribute)(CUpti_ActivityAttribute attr, size_t *size, void *value);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc request,
                                      CUpti_BuffersCallbackCompleteFunc complete);
    CUptiResult (*enable)(CUpti_ActivityKind kind);
    CUptiResult (*get_next_record)(uint8_t *buffer, size_t valid_bytes, CUpti_Activity **record);
    CUptiResult (*get_num_dropped_records)(CUcontext context, uint32_t stream, size_t *dropped);
    CUptiResult (*flush_all)(uint32_t flag);
    CUptiResult (*push_external_correlation)(CUpti_ExternalCorrelationKind kind, uint64_t id);
    CUptiResult (*pop_external_correlation)(CUpti_ExternalCorrelationKind kind, uint64_t *last);
    CUptiResult (*get_callback_name)(CUpti_CallbackDomain domain, uint32_t cbid, const char **name);
    CUptiResult (*disable)(CUpti_ActivityKind kind);
    /* records of one runtime or driver API (CUPTI of CUDA 12.5 and newer; the real table looks
     * them up at run time and answers CUPTI_ERROR_NOT_SUPPORTED without them) */
    CUptiResult (*enable_runtime_api)(CUpti_CallbackId cbid, uint8_t enable);
    CUptiResult (*enable_driver_api)(CUpti_CallbackId cbid, uint8_t enable);
    /* the detach at the end of the window: a callback at the next API exit calls finalize */
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata);
    CUptiResult (*enable_domain)(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                 CUpti_CallbackDomain domain);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle subscriber);
    CUptiResult (*finalize)(void);
};

/* libcupti itself. */
extern const struct sp_cupti_ops sp_cupti_real_ops;

#endif

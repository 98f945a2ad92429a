/* The job's seccomp filters as the helper installs them.  The policy lives
 * in seccomp-policy.c and is compiled by libseccomp at build time: building
 * it at run time cost about 1.5 ms per spawn (libseccomp probes the
 * kernel's API level, builds its rule database and generates the BPF),
 * more than any other setup step.  sandbox/tools/seccomp-gen writes the
 * result to a generated C file (sbx_seccomp_bpf_*), and a unit test checks
 * it still equals what libseccomp builds from the policy.  Its own file so
 * that the generator, which links seccomp.c, does not need its output. */
#include "sandbox/seccomp-internal.h"

void sbx_seccomp_builtin(struct sbx_seccomp_prog *ret)
{
        /* The kernel only reads the filters: the casts drop const for
         * struct sock_fprog's sake, nothing writes through them. */
        *ret = (struct sbx_seccomp_prog){
                .filters = {
                        { sbx_seccomp_bpf_ioctl_len, (struct sock_filter *)sbx_seccomp_bpf_ioctl },
                        { sbx_seccomp_bpf_allow_len, (struct sock_filter *)sbx_seccomp_bpf_allow },
                },
                .owned = false,
        };
}

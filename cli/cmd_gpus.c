/* cmd_gpus.c: `flashlab gpus`: the hardware presets (presets.h) as the rest of the house sees them --
 * the SRAM per SM that --sram sets, and the whole GPU that `l2 --launch --gpu` and
 * scripts/explain_kernels.py use: SMs, L2 capacity, the launch model's L2 partitions, and whether
 * those were checked against the GPU.  Nothing here names a GPU: the rows are the presets'. */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include <flashlab/presets.h>

static const char *usage =
    "usage: flashlab gpus [--format table|csv]\n"
    "Lists the hardware presets: name (--sram, --gpu); the word of the device name the CUDA\n"
    "runtime and Nsight Compute report; L1/shared memory per SM (--sram's M); SMs; L2 in MiB;\n"
    "the launch model's L2 partitions (docs/l2_model.md section 6); checked: 'measured' where\n"
    "the SMs, L2 and partitions were measured on that GPU, 'published' where they are the\n"
    "vendor's figures; and their source.\n\n"
    "  --format F  table or csv  [table]\n"
    "  --help      this text\n";

int fl_cmd_gpus(int argc, char **argv)
{
    int csv;
    const int rc = fl_cli_list_opts(argc, argv, "gpus", usage, &csv);
    if (rc >= 0) return rc;
    int n;
    const fl_sram_preset *p = fl_sram_presets(&n);
    if (csv) puts("name,device,sram_kib,sms,l2_mib,l2_partitions,checked,source");
    else printf("%-8s %-9s %8s %5s %7s %10s %-9s %s\n", "gpu", "device", "SRAM/SM", "SMs", "L2 MiB", "partitions",
                "checked", "source");
    for (int i = 0; i < n; i++) {
        const char *checked = p[i].checked ? "measured" : "published";
        if (csv)
            printf("%s,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%s,\"%s\"\n", p[i].name, p[i].device,
                   p[i].sram_bytes / 1024, p[i].sms, p[i].l2_mib, p[i].l2_parts, checked, p[i].gpu_source);
        else
            printf("%-8s %-9s %4" PRId64 " KiB %5" PRId64 " %7" PRId64 " %10d %-9s %s\n", p[i].name, p[i].device,
                   p[i].sram_bytes / 1024, p[i].sms, p[i].l2_mib, p[i].l2_parts, checked, p[i].gpu_source);
    }
    return 0;
}

"""Lab 4's grading: labkit.lab4's checks on the grader's shapes and on more of them that the
child never sees; no answer may call the library's rules (fl.mask_matrix, fl.mask_keep,
fl.kv_head, fl.cu_seqlens_check)."""
from flashlab.labkit import lab4 as KIT

from .core import Check

LAB, SOURCE = 4, "lab4_masks_heads"


def params(g):
    P = KIT.draw(g)
    P["_hidden"] = KIT.draw(g)
    return P


def _extra(P, k):
    return P["_hidden"][k]


CHECKS = [
    Check("lab4.decode-corner", ("decode_keep",), cells=(1,),
          grade=lambda P, decode_keep: KIT.decode_corner.problems(P, decode_keep, _extra(P, "decode"))),
    Check("lab4.blind-tests", ("blind_shapes",), cells=(2,),
          grade=lambda P, blind_shapes: KIT.blind_tests.problems(P, blind_shapes)),
    Check("lab4.window", ("window_keep",), cells=(3,),
          grade=lambda P, window_keep: KIT.window.problems(P, window_keep, _extra(P, "window"))),
    Check("lab4.varlen", ("cu_seqlens",), cells=(4,),
          grade=lambda P, cu_seqlens: KIT.varlen.problems(P, cu_seqlens, _extra(P, "lengths"))),
    Check("lab4.gqa", ("kv_head",), cells=(5,),
          grade=lambda P, kv_head: KIT.gqa.problems(P, kv_head, _extra(P, "heads"))),
]

"""Model factories for `mmaformal calibrate --model bench.calibrate_factories:NAME` (run from the
checkout root): each returns (model, example_inputs) with random weights, no download.

    vit     timm ViT-S/16 (224x224, one image), attention unfused (q @ k^T, attn @ v as GEMMs)
    mlp     a two-layer MLP (no dependency beyond torch; a smoke test)
"""
from __future__ import annotations

import torch


def vit():
    import timm
    try:
        from timm.layers import set_fused_attn
        set_fused_attn(False)
    except ImportError:                      # older timm: the env switch
        import os
        os.environ["TIMM_FUSED_ATTN"] = "0"
    model = timm.create_model("vit_small_patch16_224", pretrained=False)
    for m in model.modules():                # timm versions that read the flag at build time
        if hasattr(m, "fused_attn"):
            m.fused_attn = False
    g = torch.Generator().manual_seed(0)
    return model, (torch.randn(1, 3, 224, 224, generator=g),)


def mlp():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    return model, (torch.randn(64, 256, generator=g),)

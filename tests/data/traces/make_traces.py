#!/usr/bin/env python3
"""Records CPU training-memory traces as MiniMalloc CSV buffer lists.

Each trace is one small architecture built here (no model zoo), created,
then trained for a few steps under PyTorch's profiler with
profile_memory=True on the CPU, one thread. Every allocation the profiler
saw becomes one buffer: its size in bytes and its lifetime [lower, upper)
in steps of the allocation sequence. Time advances only where a free
follows an allocation, so buffers freed before another is allocated never
share a step, and buffers alive together always do: the conflicts are
exactly those of the real run. Buffers never freed live to the end; frees
of memory allocated before profiling are ignored.

    python3 -m venv venv && venv/bin/pip install torch==2.13.0 transformers==5.23.0
    venv/bin/python make_traces.py            # writes the CSV files here
    venv/bin/python make_traces.py gpt2_train # just that one

The first five traces (resnet101ish, transformer, mixer, lstm, unet) are
architectures written here; the others are architectures of the
transformers library (GPT-2, Llama, BERT, ViT, ResNet-50, ConvNeXt,
MobileNetV2, and, recorded later, Mistral, GPT-NeoX, DistilBERT, DeiT,
RegNet) built from a configuration with random weights (nothing is
downloaded), smaller than the published models so that a CPU step takes
seconds. The traces in this folder were made with torch 2.13.0+cpu and
transformers 5.23.0 (Linux x86-64).
"""
import csv
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNetish(nn.Module):
    """A ResNet-101-deep CNN of basic blocks (3, 4, 23, 3), narrow."""

    def __init__(self, width=16, classes=100):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        blocks, cin = [], width
        for stage, n in enumerate((3, 4, 23, 3)):
            cout = width * 2 ** stage
            for i in range(n):
                blocks.append(BasicBlock(cin, cout, 2 if i == 0 and stage > 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class UNet(nn.Module):
    """U-Net: four levels down and up, encoder outputs kept for the decoder."""

    def __init__(self, width=16, levels=4):
        super().__init__()
        conv = lambda a, b: nn.Sequential(nn.Conv2d(a, b, 3, 1, 1), nn.BatchNorm2d(b), nn.ReLU(),
                                          nn.Conv2d(b, b, 3, 1, 1), nn.BatchNorm2d(b), nn.ReLU())
        self.down = nn.ModuleList()
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        cin = 3
        for level in range(levels):
            self.down.append(conv(cin, width << level))
            cin = width << level
        self.mid = conv(cin, cin * 2)
        cin *= 2
        for level in reversed(range(levels)):
            self.up.append(nn.ConvTranspose2d(cin, width << level, 2, 2))
            self.merge.append(conv(2 * (width << level), width << level))
            cin = width << level
        self.out = nn.Conv2d(cin, 1, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([up(x), skips.pop()], 1))
        return self.out(x)


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.n2 = nn.LayerNorm(dim)
        self.ch = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class Mixer(nn.Module):
    """MLP-Mixer: 4x4 patches of 32x32 images, 32 blocks."""

    def __init__(self, dim=128, depth=32, classes=100):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.blocks = nn.Sequential(*[MixerBlock(64, dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


class Encoder(nn.Module):
    """Transformer encoder (pre-norm), token embedding and a classifier."""

    def __init__(self, vocab=1000, dim=128, heads=4, depth=32, classes=100):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)).mean(1))


class Lstm(nn.Module):
    """Three-layer LSTM language model, unrolled by hand (one cell per step)."""

    def __init__(self, vocab=1000, dim=128, layers=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.cells = nn.ModuleList([nn.LSTMCell(dim, dim) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab)

    def forward(self, x):
        h = self.emb(x)
        for cell in self.cells:
            state = (h.new_zeros(h.shape[0], h.shape[2]), h.new_zeros(h.shape[0], h.shape[2]))
            outs = []
            for t in range(h.shape[1]):
                state = cell(h[:, t], state)
                outs.append(state[0])
            h = torch.stack(outs, 1)
        return self.head(h)


class HfLoss(nn.Module):
    """A transformers model whose forward takes (inputs, labels) and gives
    the loss the model computes itself."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x, y):
        return self.model(**{self.key: x}, labels=y).loss


def hf(config_class, model_class, key="input_ids", **config):
    """A transformers architecture from a configuration, random weights."""
    import transformers

    def make():
        cfg = getattr(transformers, config_class)(**config)
        model = getattr(transformers, model_class)(cfg)
        model.train()
        return HfLoss(model, key)
    return make


def hf_traces():
    """The transformers architectures: name -> (make, data, steps, optimizer)."""
    adamw = lambda p: torch.optim.AdamW(p, lr=1e-4)
    sgd = lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)

    def lm(batch, seq, vocab):
        def data():
            x = torch.randint(0, vocab, (batch, seq))
            return x, x.clone()
        return data

    def images(batch, side, classes):
        return lambda: (torch.randn(batch, 3, side, side), torch.randint(0, classes, (batch,)))

    # Two architectures traced over two lengths each.
    gpt2 = hf("GPT2Config", "GPT2LMHeadModel", n_layer=12, n_embd=256, n_head=8, vocab_size=2000,
              n_positions=128)
    vit = hf("ViTConfig", "ViTForImageClassification", "pixel_values", image_size=64, patch_size=8,
             hidden_size=192, num_hidden_layers=12, num_attention_heads=3, intermediate_size=768,
             num_labels=100)
    return {
        "gpt2_train": (gpt2, lm(4, 128, 2000), 3, adamw),
        # Sixteen layers, fifteen steps: a trace of about 60,000 buffers.
        "llama_train": (hf("LlamaConfig", "LlamaForCausalLM", hidden_size=256, num_hidden_layers=16,
                           num_attention_heads=8, num_key_value_heads=4, intermediate_size=688,
                           vocab_size=2000, max_position_embeddings=128), lm(4, 128, 2000), 15, adamw),
        "bert_train": (hf("BertConfig", "BertForMaskedLM", hidden_size=256, num_hidden_layers=8,
                          num_attention_heads=4, intermediate_size=1024, vocab_size=2000,
                          max_position_embeddings=128), lm(4, 128, 2000), 3, adamw),
        "vit_train": (vit, images(8, 64, 100), 3, adamw),
        # The same ViT over eighteen steps: about 56,000 buffers, above the
        # pool size where auto's local search stops running.
        "vit_long_train": (vit, images(8, 64, 100), 18, adamw),
        "resnet50_train": (hf("ResNetConfig", "ResNetForImageClassification", "pixel_values",
                              layer_type="bottleneck", depths=[3, 4, 6, 3], embedding_size=32,
                              hidden_sizes=[64, 128, 256, 512], num_labels=100),
                           images(8, 64, 100), 8, sgd),
        "convnext_train": (hf("ConvNextConfig", "ConvNextForImageClassification", "pixel_values",
                              depths=[2, 2, 6, 2], hidden_sizes=[48, 96, 192, 384], num_labels=100),
                           images(8, 64, 100), 3, adamw),
        "mobilenetv2_train": (hf("MobileNetV2Config", "MobileNetV2ForImageClassification",
                                 "pixel_values", image_size=64, depth_multiplier=0.5, num_labels=100),
                              images(8, 64, 100), 3, sgd),
        # Recorded later, to see whether what auto does on the traces above
        # carries over to architectures it was not tuned on.
        "gpt2_long_train": (gpt2, lm(4, 128, 2000), 18, adamw),
        "mistral_train": (hf("MistralConfig", "MistralForCausalLM", hidden_size=256, num_hidden_layers=8,
                             num_attention_heads=8, num_key_value_heads=2, intermediate_size=688,
                             vocab_size=2000, max_position_embeddings=128), lm(4, 128, 2000), 5, adamw),
        "gptneox_train": (hf("GPTNeoXConfig", "GPTNeoXForCausalLM", hidden_size=256, num_hidden_layers=8,
                             num_attention_heads=8, intermediate_size=1024, vocab_size=2000,
                             max_position_embeddings=128), lm(4, 128, 2000), 4, adamw),
        "distilbert_train": (hf("DistilBertConfig", "DistilBertForMaskedLM", dim=256, n_layers=6, n_heads=4,
                                hidden_dim=1024, vocab_size=2000, max_position_embeddings=128),
                             lm(4, 128, 2000), 6, adamw),
        "deit_train": (hf("DeiTConfig", "DeiTForImageClassification", "pixel_values", image_size=64,
                          patch_size=8, hidden_size=192, num_hidden_layers=8, num_attention_heads=3,
                          intermediate_size=768, num_labels=100), images(8, 64, 100), 6, adamw),
        "regnet_train": (hf("RegNetConfig", "RegNetForImageClassification", "pixel_values", num_labels=100,
                            hidden_sizes=[32, 64, 160, 384], depths=[1, 2, 4, 1], embedding_size=32,
                            groups_width=16), images(8, 64, 100), 6, sgd),
    }


def record(make, data, loss_fn, steps, optimizer):
    """Builds the model and its optimizer, trains `steps` steps; returns the
    profiler's memory events (address, bytes; bytes < 0 frees) in order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model = make()
        opt = optimizer(model.parameters())
        for _ in range(steps):
            x, y = data()
            opt.zero_grad(set_to_none=True)
            loss = model(x, y) if isinstance(model, HfLoss) else loss_fn(model(x), y)
            loss.backward()
            opt.step()
        del model, opt
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    mem = [e["args"] for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    mem.sort(key=lambda a: a["Ev Idx"])
    return [(a["Addr"], a["Bytes"]) for a in mem]


def buffers(events):
    """Allocation events -> (lower, upper, size), time advancing only where a
    free follows an allocation."""
    t, last_alloc, live, out = 0, False, {}, []
    for addr, nbytes in events:
        if nbytes > 0:
            live[addr] = (t, nbytes)
            last_alloc = True
        elif nbytes < 0:
            if last_alloc:
                t += 1
                last_alloc = False
            if addr in live:
                start, size = live.pop(addr)
                out.append((start, t, size))
    end = t + 1
    out.extend((start, end, size) for start, size in live.values())
    out.sort()
    return [(lo, max(hi, lo + 1), size) for lo, hi, size in out]


def write(name, rows):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "lower", "upper", "size"])
        for i, (lo, hi, size) in enumerate(rows):
            w.writerow([i, lo, hi, size])
    live = most = 0
    for _, d in sorted([(lo, 1) for lo, _, _ in rows] + [(hi, -1) for _, hi, _ in rows]):
        live += d
        most = max(most, live)
    print(f"{name}: {len(rows)} buffers, at most {most} live at once", file=sys.stderr)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    images = lambda n, side: (lambda: (torch.randn(n, 3, side, side), torch.randint(0, 100, (n,))))
    tokens = lambda n, seq: (lambda: (torch.randint(0, 1000, (n, seq)), torch.randint(0, 100, (n,))))
    adam = lambda p: torch.optim.Adam(p, lr=1e-3)
    sgd = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)
    ce = F.cross_entropy

    def lm_data():
        x = torch.randint(0, 1000, (8, 128))
        return x, torch.roll(x, -1, 1)

    def seg_data():
        return torch.randn(4, 3, 64, 64), torch.rand(4, 1, 64, 64)

    seg_loss = F.binary_cross_entropy_with_logits
    lm_loss = lambda out, y: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    traces = {
        "resnet101ish_train": (ResNetish, images(8, 32), ce, 5, sgd),
        "transformer_train": (Encoder, tokens(8, 64), ce, 3, adam),
        "mixer_train": (Mixer, images(8, 32), ce, 3, adam),
        "lstm_train": (Lstm, lm_data, lm_loss, 3, adam),
        "unet_train": (UNet, seg_data, seg_loss, 8, adam),
    }
    for name, (make, data, steps, opt) in hf_traces().items():
        traces[name] = (make, data, None, steps, opt)  # the model gives its loss
    only = set(sys.argv[1:])
    for name, (make, data, loss_fn, steps, opt) in traces.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        write(name, buffers(record(make, data, loss_fn, steps, opt)))


if __name__ == "__main__":
    main()

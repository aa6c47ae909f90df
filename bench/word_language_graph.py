"""A Myelin project's model graph rebuilt as a PyTorch module, for the word-language benches
(torch_word_language.py trains it, word_language_parity.py loads a Myelin checkpoint into it).

Every layer node becomes a child module named as Myelin names it (graph/analysis.cpp): the node's
name, else its position among the layer nodes in Myelin's topological order (Kahn's algorithm,
ties broken by file order). The layers are PyTorch's own (nn.Embedding, nn.LSTM,
nn.TransformerEncoder, ...) or, where PyTorch has no class, a few lines written here with no
parameters of their own, so the state_dict keys are exactly Myelin's and a checkpoint loads with
load_state_dict(strict=True). Only the kinds the word-language examples use are known; another
kind raises with its name.
"""
import heapq
import math

import torch
from torch import nn


def _attrs(node):
    return node.get("attrs", {})


class PaddingLengths(nn.Module):
    """int64 tokens [N, T] -> the count of non-zero tokens [N], at least 1."""

    def forward(self, tokens):
        return (tokens != 0).sum(1).clamp(min=1)


class SinusoidalPositionalEncoding(nn.Module):
    """x + the sinusoidal table's first T rows (computed in double), then dropout. The table is
    not in the state_dict (Myelin's `pe` is a non-persistent buffer)."""

    def __init__(self, d_model, dropout, max_len):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) *
                        (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)[:, :d_model // 2]
        self.register_buffer("pe", pe.float(), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(1)])


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len):
        super().__init__()
        self.pos_embedding = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        positions = torch.arange(x.size(1), device=x.device)
        return self.dropout(x + self.pos_embedding(positions))


def _valid_steps(lengths, steps):
    """bool [N, T], true at the steps before each length."""
    return torch.arange(steps, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


class SequenceMeanPool(nn.Module):
    def forward(self, x, lengths=None):
        if lengths is None:
            return x.mean(1)
        mask = _valid_steps(lengths, x.size(1)).unsqueeze(2).to(x.dtype)
        return (x * mask).sum(1) / lengths.unsqueeze(1).to(x.dtype)


class SequenceLast(nn.Module):
    def forward(self, x, lengths=None):
        if lengths is None:
            return x[:, -1]
        return x[torch.arange(x.size(0), device=x.device), lengths - 1]


def recurrent_layer(kind, a):
    """Myelin's LSTM / GRU / RNN node: PyTorch's layer (batch first, so its parameters are the
    node's: weight_ih_l0, ...), lengths as a packed sequence, output "sequence" (every step) or
    "last" (the top layer's final state, both directions concatenated)."""
    base = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN": nn.RNN}[kind]

    class Recurrent(base):
        def forward(self, x, lengths=None):
            steps = x.size(1)
            if lengths is not None:
                x = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                      enforce_sorted=False)
            out, state = super().forward(x)
            if not self.last:
                if lengths is not None:
                    out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                              total_length=steps)
                return out
            h_n = state[0] if kind == "LSTM" else state
            return torch.cat([h_n[-2], h_n[-1]], 1) if self.bidirectional else h_n[-1]

    options = dict(input_size=a.get("input_size", 32), hidden_size=a.get("hidden_size", 64),
                   num_layers=a.get("num_layers", 1), bias=a.get("bias", True),
                   batch_first=True, dropout=a.get("dropout", 0.0),
                   bidirectional=a.get("bidirectional", False))
    if kind == "RNN":
        options["nonlinearity"] = a.get("nonlinearity", "tanh")
    layer = Recurrent(**options)
    layer.last = a.get("output", "sequence") == "last"
    return layer


class Encoder(nn.TransformerEncoder):
    """Myelin's TransformerEncoder node: PyTorch's, batch first, lengths as the key padding
    mask, "causal" as the square subsequent mask."""

    def __init__(self, a):
        d_model = a.get("d_model", 64)
        layer = nn.TransformerEncoderLayer(
            d_model, a.get("nhead", 4), dim_feedforward=a.get("dim_feedforward", 256),
            dropout=a.get("dropout", 0.1), activation=a.get("activation", "relu"),
            layer_norm_eps=a.get("layer_norm_eps", 1e-5), batch_first=True,
            norm_first=a.get("norm_first", False))
        norm = nn.LayerNorm(d_model, eps=a.get("layer_norm_eps", 1e-5)) if a.get("norm") else None
        super().__init__(layer, a.get("num_layers", 2), norm=norm, enable_nested_tensor=False)
        self.causal = a.get("causal", False)

    def forward(self, x, lengths=None):
        padding = None if lengths is None else ~_valid_steps(lengths, x.size(1))
        mask = None
        if self.causal:
            mask = torch.triu(torch.full((x.size(1), x.size(1)), float("-inf")), diagonal=1)
        return super().forward(x, mask=mask, src_key_padding_mask=padding)


class SelfAttention(nn.MultiheadAttention):
    def __init__(self, a):
        super().__init__(a.get("embed_dim", 32), a.get("num_heads", 4),
                         dropout=a.get("dropout", 0.0), bias=a.get("bias", True),
                         batch_first=True)
        self.causal = a.get("causal", False)

    def forward(self, x, lengths=None):
        padding = None if lengths is None else ~_valid_steps(lengths, x.size(1))
        mask = None
        if self.causal:
            mask = torch.triu(torch.full((x.size(1), x.size(1)), float("-inf")), diagonal=1)
        return super().forward(x, x, x, key_padding_mask=padding, attn_mask=mask,
                               need_weights=False)[0]


def make_layer(kind, a):
    if kind == "Embedding":
        return nn.Embedding(a["num_embeddings"], a["embedding_dim"],
                            padding_idx=a.get("padding_idx"))
    if kind == "Linear":
        return nn.Linear(a["in_features"], a["out_features"], bias=a.get("bias", True))
    if kind == "Flatten":
        return nn.Flatten(a.get("start_dim", 1), a.get("end_dim", -1))
    if kind == "ReLU":
        return nn.ReLU()
    if kind == "Dropout":
        return nn.Dropout(a.get("p", 0.5))
    if kind == "PaddingLengths":
        return PaddingLengths()
    if kind in ("LSTM", "GRU", "RNN"):
        return recurrent_layer(kind, a)
    if kind == "PositionalEncoding":
        cls = (LearnedPositionalEncoding if a.get("encoding", "sinusoidal") == "learned"
               else SinusoidalPositionalEncoding)
        return cls(a.get("d_model", 32), a.get("dropout", 0.1), a.get("max_len", 512))
    if kind == "TransformerEncoder":
        return Encoder(a)
    if kind == "MultiheadAttention":
        return SelfAttention(a)
    if kind == "SequenceMeanPool":
        return SequenceMeanPool()
    if kind == "SequenceLast":
        return SequenceLast()
    raise ValueError(f"word_language_graph: no PyTorch form for layer kind '{kind}'")


class GraphModel(nn.Module):
    """The project's graph: one Input (the tokens), one Output."""

    def __init__(self, model_json):
        super().__init__()
        nodes = model_json["nodes"]
        index = {node["id"]: i for i, node in enumerate(nodes)}
        sources = [[] for _ in nodes]  # per node: (port, source index)
        successors = [[] for _ in nodes]
        for edge in model_json["edges"]:
            s, t = index[edge["from"]], index[edge["to"]]
            sources[t].append((edge.get("port", 0), s))
            successors[s].append(t)
        pending = [len(s) for s in sources]
        ready = [i for i, p in enumerate(pending) if p == 0]
        heapq.heapify(ready)
        self.order = []
        while ready:
            i = heapq.heappop(ready)
            self.order.append(i)
            for t in successors[i]:
                pending[t] -= 1
                if pending[t] == 0:
                    heapq.heappush(ready, t)
        self.kinds = [node["kind"] for node in nodes]
        self.sources = [[s for _, s in sorted(src)] for src in sources]
        self.names = {}
        position = 0
        for i in self.order:
            kind = self.kinds[i]
            if kind in ("Input", "Output"):
                continue
            name = nodes[i].get("name") or str(position)
            position += 1
            self.names[i] = name
            self.add_module(name, make_layer(kind, _attrs(nodes[i])))

    def forward(self, tokens):
        values = {}
        for i in self.order:
            kind = self.kinds[i]
            inputs = [values[s] for s in self.sources[i]]
            if kind == "Input":
                values[i] = tokens
            elif kind == "Output":
                return inputs[0]
            else:
                values[i] = getattr(self, self.names[i])(*inputs)
        raise ValueError("the graph has no Output node")


def build_model(project):
    return GraphModel(project["model"])


def make_optimizer(o, parameters):
    kind = o.get("kind", "Adam")
    options = dict(lr=o.get("lr", 1e-3), betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
                   eps=o.get("eps", 1e-8), amsgrad=o.get("amsgrad", False))
    if kind == "Adam":
        return torch.optim.Adam(parameters, weight_decay=o.get("weight_decay", 0.0), **options)
    if kind == "AdamW":
        return torch.optim.AdamW(parameters, weight_decay=o.get("weight_decay", 0.01), **options)
    raise ValueError(f"word_language_graph: optimizer '{kind}' is not supported here")

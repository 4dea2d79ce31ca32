"""A tiny pre-LN decoder-only transformer in plain torch, with a policy head (next-token logits) or a scalar
head (reward or value per position). Dropout is absent on purpose: with dropout the log-probabilities of
the rollout and of the update differ for the same parameters, and the PPO ratio is no longer 1 at the
first step (Huang et al., "The N Implementation Details of RLHF with PPO", detail "disable dropout").
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .config import ModelSettings
from .language import EOS


class Block(nn.Module):
    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        """``cache``: this block's [keys, values] of the positions before ``x`` (empty at the start), extended
        in place; with earlier positions cached, ``x`` is one new position, which may attend to all of them."""
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        causal = True
        if cache is not None:
            if cache:
                assert T == 1, "a cached forward takes one new position at a time"
                k, v, causal = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2), False
            cache[:] = [k, v]
        att = F.scaled_dot_product_attention(q, k, v, is_causal=causal).transpose(1, 2).reshape(B, T, d)
        x = x + self.proj(att)
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    """``head="policy"``: logits [B, T, V] predicting token t+1 at position t; ``head="scalar"``: [B, T]."""

    def __init__(self, vocab_size: int, seq_len: int, settings: ModelSettings, head: str = "policy"):
        super().__init__()
        d = settings.d_model
        self.settings, self.head_kind = settings, head
        self.tok_emb, self.pos_emb = nn.Embedding(vocab_size, d), nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList(Block(d, settings.n_head) for _ in range(settings.n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab_size if head == "policy" else 1)
        for module in self.modules():  # GPT-2's initialisation
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        """``cache``: a KV cache from ``new_cache``, for generation: ``tokens`` continue what it holds."""
        start = cache[0][0].shape[2] if cache and cache[0] else 0
        x = self.tok_emb(tokens) + self.pos_emb.weight[start: start + tokens.shape[1]]
        for i, block in enumerate(self.blocks):
            x = block(x, cache[i] if cache is not None else None)
        out = self.head(self.ln_f(x))
        return out if self.head_kind == "policy" else out[..., 0]

    def new_cache(self) -> list:
        return [[] for _ in self.blocks]

    def trunk_state(self) -> dict:
        """Every parameter but the head: what a reward model takes over from the SFT policy."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith("head.")}


def response_logits(policy: Transformer, queries: torch.Tensor, responses: torch.Tensor,
                    temperature: float) -> torch.Tensor:
    """Logits / T of every response token given what precedes it: [B, L, V]. Dividing by the sampling
    temperature here, wherever log-probabilities are taken, keeps them those of the distribution that was
    sampled (N Implementation Details, "scale the logits by sampling temperature")."""
    P = queries.shape[1]
    logits = policy(torch.cat([queries, responses], 1))[:, P - 1:-1]
    return logits / temperature


def token_log_probs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]


def response_values(model: Transformer, queries: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """Scalar head at the position that emitted each response token (the state before it): [B, L]."""
    P = queries.shape[1]
    return model(torch.cat([queries, responses], 1))[:, P - 1:-1]


def sequence_scores(model: Transformer, queries: torch.Tensor, responses: torch.Tensor,
                    lengths: torch.Tensor) -> torch.Tensor:
    """Scalar head on each response's last token (EOS when there is one): [B]."""
    out = model(torch.cat([queries, responses], 1))
    last = queries.shape[1] + lengths.long() - 1
    return out.gather(1, last[:, None])[:, 0]


@torch.no_grad()
def generate(policy: Transformer, queries: torch.Tensor, length: int, temperature: float,
             gen: torch.Generator | None, greedy: bool = False, cache: bool = True,
             return_logits: bool = False):
    """[B, length] responses sampled from softmax(logits / T) (or the argmax), EOS-padded after EOS; with
    ``return_logits`` also the logits / T each token was drawn from ([B, length, V]), those of
    ``response_logits`` on the result. ``cache``: keys and values of the prefix are kept, so each step runs
    the model on the new token only; otherwise it reruns the whole prefix (the same function; the floating-point
    sums differ in the last bits, about 1e-6 in the logits)."""
    done = torch.zeros(queries.shape[0], dtype=torch.bool)
    kv = policy.new_cache() if cache else None
    tokens, step_logits = queries, []
    logits = policy(queries, kv)[:, -1]
    for t in range(length):
        logits = logits / temperature
        step_logits.append(logits)
        if greedy:
            nxt = logits.argmax(-1)
        else:
            nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0]
        nxt = torch.where(done, EOS, nxt)
        done |= nxt == EOS
        tokens = torch.cat([tokens, nxt[:, None]], 1)
        if t + 1 < length:
            logits = (policy(nxt[:, None], kv) if cache else policy(tokens))[:, -1]
    responses = tokens[:, queries.shape[1]:]
    return (responses, torch.stack(step_logits, 1)) if return_logits else responses

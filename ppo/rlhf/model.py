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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, d)
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

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(tokens) + self.pos_emb.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        out = self.head(self.ln_f(x))
        return out if self.head_kind == "policy" else out[..., 0]

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
             gen: torch.Generator | None, greedy: bool = False) -> torch.Tensor:
    """[B, length] responses sampled from softmax(logits / T) (or the argmax), EOS-padded after EOS."""
    tokens, done = queries, torch.zeros(queries.shape[0], dtype=torch.bool)
    for _ in range(length):
        logits = policy(tokens)[:, -1] / temperature
        if greedy:
            nxt = logits.argmax(-1)
        else:
            nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)[:, 0]
        nxt = torch.where(done, EOS, nxt)
        done |= nxt == EOS
        tokens = torch.cat([tokens, nxt[:, None]], 1)
    return tokens[:, queries.shape[1]:]

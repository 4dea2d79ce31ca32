"""A seeded synthetic language and its programmatic gold reward.

The grammar is a sparse Markov chain over ``num_words`` words: each word allows ``successors`` next words
with Dirichlet probabilities. A sequence is BOS, a prompt of ``prompt_length`` words, then a response that
continues the chain and ends with EOS (probability ``eos_prob`` per step once ``min_response_length``
words are out) or is cut at ``max_response_length`` tokens. Tokens after the first EOS are padding (EOS
again) and never count.

The gold reward is a program, so over-optimisation is measured exactly: each response word earns its
hidden valence (standard normal, drawn with the grammar), a word at most ``max_count`` times, and every
ungrammatical transition costs ``violation_penalty``. The pretraining data are grammatical and rarely
repeat a word, so a reward model trained on samples of them has almost never seen what the penalties
punish: the gap a policy can exploit (Gao et al. 2022's extremal Goodhart).
"""
from __future__ import annotations

import string

import numpy as np
import torch

from .config import LanguageSettings

BOS, EOS = 0, 1
FIRST_WORD = 2


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """True for the tokens a response consists of: up to and including its first EOS ([B, L] bool)."""
    is_eos = responses == EOS
    eos_before = torch.cumsum(is_eos.long(), 1) - is_eos.long()  # EOS tokens strictly before t
    return eos_before == 0


class Language:
    """The grammar, its samplers and the gold reward; everything drawn from ``settings.seed``."""

    def __init__(self, settings: LanguageSettings):
        s = self.settings = settings
        rng = np.random.default_rng(s.seed)
        W = s.num_words
        self.vocab_size = V = W + FIRST_WORD
        self.seq_len = 1 + s.prompt_length + s.max_response_length
        transition = np.zeros((V, V))  # next-word probabilities of each word (rows BOS, EOS unused)
        for w in range(W):
            nxt = rng.choice(W, size=s.successors, replace=False)
            transition[FIRST_WORD + w, FIRST_WORD + nxt] = rng.dirichlet(np.full(s.successors, s.dirichlet_alpha))
        self.transition = torch.tensor(transition, dtype=torch.float32)
        self.allowed = self.transition > 0  # grammatical word -> word transitions
        self.allowed[FIRST_WORD:, EOS] = True  # any word may end a response
        valence = np.zeros(V)
        valence[FIRST_WORD:] = rng.standard_normal(W)
        self.valence = torch.tensor(valence, dtype=torch.float32)

    # ---- sampling from the grammar itself (the pretraining data)
    def sample_prompts(self, n: int, gen: torch.Generator) -> torch.Tensor:
        """[n, 1 + prompt_length]: BOS, a uniformly drawn first word, then the chain."""
        first = FIRST_WORD + torch.randint(self.settings.num_words, (n, 1), generator=gen)
        tokens = [torch.full((n, 1), BOS), first]
        for _ in range(self.settings.prompt_length - 1):
            tokens.append(torch.multinomial(self.transition[tokens[-1][:, 0]], 1, generator=gen))
        return torch.cat(tokens, 1)

    def sample_responses(self, prompts: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """[n, max_response_length] continuations of ``prompts`` as the data have them, EOS-padded."""
        s, n = self.settings, prompts.shape[0]
        last, done = prompts[:, -1], torch.zeros(n, dtype=torch.bool)
        out = torch.full((n, s.max_response_length), EOS)
        for t in range(s.max_response_length):
            word = torch.multinomial(self.transition[last], 1, generator=gen)[:, 0]
            stop = torch.rand(n, generator=gen) < s.eos_prob if t >= s.min_response_length else torch.zeros_like(done)
            token = torch.where(stop | done, EOS, word)
            out[:, t] = token
            done |= token == EOS
            last = torch.where(done, last, token)  # the EOS row has no successors: keep the last word
        return out

    def sample(self, n: int, gen: torch.Generator) -> torch.Tensor:
        """[n, seq_len] whole sequences (prompt + response), for pretraining."""
        prompts = self.sample_prompts(n, gen)
        return torch.cat([prompts, self.sample_responses(prompts, gen)], 1)

    # ---- the gold reward and the diagnostics of how a policy games the proxy
    def gold(self, prompts: torch.Tensor, responses: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per response [B]: ``gold`` reward, ``violations`` (ungrammatical transitions, including a BOS
        inside a response), ``repeats`` (word occurrences beyond max_count), ``length`` (tokens, EOS
        included) and ``has_eos``."""
        s = self.settings
        mask = response_mask(responses)
        words = mask & (responses != EOS)
        previous = torch.cat([prompts[:, -1:], responses[:, :-1]], 1)
        violation = words & ~self.allowed[previous, responses]
        # occurrences of each token so far, itself included: the count of its one-hot, cumulated over t
        onehot = torch.nn.functional.one_hot(responses, self.vocab_size) * words[..., None]
        count = torch.cumsum(onehot, 1).gather(2, responses[..., None])[..., 0]
        counted = words & (count <= s.max_count)
        repeat = words & ~counted
        gold = ((self.valence[responses] * counted).sum(1) - s.violation_penalty * violation.sum(1)
                - s.repeat_penalty * repeat.sum(1))
        return {"gold": gold, "violations": violation.sum(1).float(), "repeats": repeat.sum(1).float(),
                "length": mask.sum(1).float(), "has_eos": (responses == EOS).any(1)}

    def decode(self, tokens: torch.Tensor) -> str:
        """A sequence as text: words as letters (w<i> past 26), BOS '^', EOS '$'; padding after EOS dropped."""
        letters = string.ascii_lowercase
        out = []
        for t in tokens.tolist():
            out.append("^" if t == BOS else "$" if t == EOS else
                       letters[t - FIRST_WORD] if self.settings.num_words <= 26 else f"w{t - FIRST_WORD} ")
            if t == EOS:
                break
        return "".join(out).strip()

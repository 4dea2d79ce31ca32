"""TRPO (ppo/algorithms/trpo.py): conjugate gradient, Fisher-vector products, line search, the trust region
on a real batch, value fitting that never touches the policy, group independence, resume
(its learning test is in tests/algorithms/test_conformance.py)."""

import numpy as np
import pytest
import torch
from killing import kill_then_resume
from same_records import assert_same_records
from torch.distributions import Normal, kl_divergence

import ppo.algorithms.base
import ppo.algorithms.trpo as trpo
import ppo.envs.lockstep
import ppo.training.driver
from ppo.algorithms.base import column_slices, fit_value, policy_parameter_names
from ppo.algorithms.rollout import collect_batch, group_context
from ppo.config.experiments import load_preset
from ppo.config.run_config import build_config
from ppo.config.settings import TRPOSettings
from ppo.nn.actor_critic import GaussianActorCritic
from ppo.training.driver import RunSpec, train_group

PRESET = load_preset("trpo_mujoco")


def config(**changes):
    trpo_section = {**PRESET.config["trpo"], **changes.pop("trpo", {})}
    return build_config({**PRESET.config, "trpo": trpo_section, **changes}, "test")


TINY = config(total_steps=1024, horizon=256)  # 4 iterations; Hopper ends episodes by falling


def make_algorithm(cfg, seeds, task="Hopper-v5"):
    """The algorithm of a group as ppo/training/driver.py builds it, for tests that drive it step by step."""
    ctx = group_context(task, [cfg] * len(seeds), seeds)
    return trpo.TRPO(ctx)


# ---------------------------------------------------------------- conjugate gradient


def spd(n, gen, scale):
    m = torch.randn(n, n, generator=gen, dtype=torch.float64)
    return m @ m.T * scale + torch.eye(n, dtype=torch.float64)


def test_conjugate_gradient_solves_each_runs_own_system():
    gen = torch.Generator().manual_seed(0)
    A = torch.stack([spd(6, gen, 1.0), spd(6, gen, 10.0)])  # two runs, two different SPD matrices
    b = torch.randn(2, 6, generator=gen, dtype=torch.float64)

    def fvp(v):
        return torch.einsum("gij,gj->gi", A, v)

    # In exact arithmetic CG solves an n×n system in n iterations; in float64 that is good to ~1e-10.
    x = trpo.conjugate_gradient(fvp, b, iters=6, residual_tol=1e-30)
    expected = torch.linalg.solve(A, b)
    torch.testing.assert_close(x, expected, rtol=1e-8, atol=1e-10)
    # Fewer iterations than n: not solved yet (the test can fail).
    x3 = trpo.conjugate_gradient(fvp, b, iters=3, residual_tol=1e-30)
    assert (x3 - expected).abs().max() > 1e-4
    # Each row is its own problem: run 1 solved beside run 0 is bit-identical to run 1 alone.
    alone = trpo.conjugate_gradient(lambda v: torch.einsum("gij,gj->gi", A[1:], v), b[1:], 6, 1e-30)
    assert torch.equal(alone[0], x[1])


def test_conjugate_gradient_stops_per_run():
    # Run 0: F = 2·I, solved exactly after one iteration, then frozen (residual 0 < tol) while run 1 goes on.
    # Run 1: zero right-hand side (a zero gradient): x = 0, no division by zero leaks into it.
    gen = torch.Generator().manual_seed(1)
    A = torch.stack([2 * torch.eye(5, dtype=torch.float64), spd(5, gen, 1.0)])
    b = torch.stack([torch.arange(1.0, 6.0, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)])
    calls = []

    def fvp(v):
        calls.append(v.clone())
        return torch.einsum("gij,gj->gi", A, v)

    x = trpo.conjugate_gradient(fvp, b, iters=10, residual_tol=1e-10)
    torch.testing.assert_close(x[0], b[0] / 2, rtol=0, atol=0)
    assert torch.equal(x[1], torch.zeros(5, dtype=torch.float64))
    assert len(calls) == 1  # both runs finished: no more Fisher-vector products


# ---------------------------------------------------------------- Fisher-vector products


def manual_kl(theta, shapes, obs, old_mean, old_std):
    """Mean over states of KL[N(old_mean, old_std) ‖ N(μ_θ(s), σ_θ)], summed over action dims, from a flat
    parameter vector of one run: an independent forward pass (tanh MLP, one hidden layer) and
    torch.distributions' KL."""
    parts, i = {}, 0
    for name, shape in shapes.items():
        n = int(np.prod(shape))
        parts[name] = theta[i:i + n].reshape(shape)
        i += n
    hidden = torch.tanh(obs @ parts["policy.w0"] + parts["policy.b0"].reshape(-1))
    mean = hidden @ parts["policy.w1"] + parts["policy.b1"].reshape(-1)
    std = parts["log_std"].reshape(-1).exp()
    return kl_divergence(Normal(old_mean, old_std), Normal(mean, std)).sum(-1).mean()


def test_fisher_vector_product_is_the_hessian_of_the_kl():
    G, B, d, A, damping = 2, 7, 3, 2, 0.1
    agent = GaussianActorCritic(d, A, (4,), "normc", 0.0, [torch.Generator().manual_seed(s) for s in (3, 4)])
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():  # a generic point: sizeable output weights, a log-std that is not 0
        agent.params.flat.add_(0.5 * torch.randn(agent.params.flat.shape, generator=gen))
    names = policy_parameter_names(agent.params)
    assert names == ["policy.w0", "policy.b0", "policy.w1", "policy.b1", "log_std"]
    obs = torch.randn(G, B, d, generator=gen)
    with torch.no_grad():
        old_mean, old_log_std = agent.policy_mean(obs), agent.log_std.clone()
    fvp = trpo.fisher_vector_product(agent, names, obs, old_mean, old_log_std, damping)
    v = torch.randn(agent.params.flat.shape, generator=gen)
    product = fvp(v)

    slices = column_slices(agent.params, names)
    policy_cols = torch.cat([torch.arange(s.start, s.stop) for s in slices.values()])
    other = torch.ones(agent.params.flat.shape[1], dtype=torch.bool)
    other[policy_cols] = False
    assert torch.equal(product[:, other], damping * v[:, other])  # value and padding columns: damping only
    for g in range(G):
        shapes = {n: tuple(agent.params.views[n].shape[1:]) for n in names}
        theta = agent.params.flat[g, policy_cols].detach().double()
        fisher = torch.autograd.functional.hessian(
            lambda t: manual_kl(t, shapes, obs[g].double(), old_mean[g].double(), old_log_std[g].exp().double()),
            theta)
        expected = (fisher + damping * torch.eye(len(theta), dtype=torch.float64)) @ v[g, policy_cols].double()
        torch.testing.assert_close(product[g, policy_cols].double(), expected, rtol=1e-4, atol=1e-5)
        # The explicit F is a Fisher matrix: positive semi-definite (up to old_mean being float32) and not 0.
        eig = torch.linalg.eigvalsh(fisher)
        assert eig.min() > -1e-6 and eig.max() > 1e-2


# ---------------------------------------------------------------- line search


def test_line_search_accepts_per_run_and_restores_rejected_runs():
    G, P = 3, 8
    flat = torch.nn.Parameter(torch.zeros(G, P))
    theta_old = torch.randn(G, P, generator=torch.Generator().manual_seed(0))
    fullstep = torch.zeros(G, P)
    fullstep[:, 0] = 1.0
    fullstep[:, 1] = 0.3
    gain_before = torch.zeros(G)
    max_kl = 0.01

    def evaluate():
        f = (flat - theta_old)[:, 0].detach()  # the step fraction each run is trying
        gain = torch.stack([f[0], -f[1], f[2]])  # run 1 never improves
        kl = torch.stack([0.05 * f[0] ** 2, 0.0 * f[1], f[2] * float("nan")])  # run 2: non-finite KL
        return gain, kl

    accepted, frac, tries = trpo.backtracking_line_search(
        flat, theta_old, fullstep, torch.ones(G), gain_before, evaluate, max_kl, steps=10, kl_factor=1.5, accept=0.0)
    # Run 0: KL 0.05·f² <= 1.5·0.01 first holds at f = 1/2 (0.0125; 0.05 at f = 1): accepted on the 2nd try.
    assert accepted.tolist() == [True, False, False]
    assert frac.tolist() == [0.5, 0.0, 0.0] and tries.tolist() == [2.0, 10.0, 10.0]
    assert torch.equal(flat[0].detach(), theta_old[0] + 0.5 * fullstep[0])
    assert torch.equal(flat[1:].detach(), theta_old[1:])  # rejected: θ_old bit-exactly

    # Without the 1.5 allowance (kl_factor 1: KL <= 0.01 first at f = 1/4, 0.003125) and with an Armijo-type
    # demand gain >= accept·f·expected, which run 0's gain f meets for expected 1 but never for expected 3.
    flat.data.zero_()
    accepted, frac, tries = trpo.backtracking_line_search(
        flat, theta_old, fullstep, torch.tensor([1.0, 1.0, 1.0]), gain_before, evaluate, max_kl, 10, 1.0, 0.5)
    assert accepted[0] and frac[0] == 0.25 and tries[0] == 3
    flat.data.zero_()
    accepted, _, _ = trpo.backtracking_line_search(
        flat, theta_old, fullstep, torch.tensor([3.0, 1.0, 1.0]), gain_before, evaluate, max_kl, 10, 1.0, 0.5)
    assert not accepted[0]  # needs gain f >= 0.5·f·3: never


# ---------------------------------------------------------------- one step on a real batch


@pytest.fixture(scope="module")
def stepped():
    """Two Hopper runs, one rollout of 512 steps each, one TRPO policy step; parameters before and after."""
    torch.set_num_threads(1)
    algo = make_algorithm(config(horizon=512), seeds=[0, 1])
    batch = collect_batch(algo.ctx, algo.agent, algo.normalizer)
    before = algo.flat.detach().clone()
    stats = algo.policy_step(batch)
    after = algo.flat.detach().clone()
    return algo, batch, before, after, stats


def policy_distribution(agent, flat_values, obs):
    saved = agent.params.flat.detach().clone()
    with torch.no_grad():
        agent.params.flat.copy_(flat_values)
        dist = Normal(agent.policy_mean(obs), agent.log_std.exp().expand(*obs.shape[:2], -1))
        agent.params.flat.copy_(saved)
    return dist


def test_accepted_step_satisfies_the_kl_constraint(stepped):
    algo, batch, before, after, stats = stepped
    s = algo.settings
    old = policy_distribution(algo.agent, before, batch.obs)
    new = policy_distribution(algo.agent, after, batch.obs)
    kl = kl_divergence(old, new).sum(-1).mean(1)  # per run, by torch.distributions
    assert stats["accepted"].tolist() == [1.0, 1.0]  # on a fresh policy, the natural step is accepted
    assert (kl > 0).all() and (kl <= s.line_search_kl_factor * s.max_kl).all(), kl
    torch.testing.assert_close(stats["kl"], kl, rtol=1e-4, atol=1e-7)
    # The full step is sized to the trust region: a quadratic model says KL ≈ δ·f².
    expected = s.max_kl * stats["step_fraction"] ** 2
    assert ((kl > 0.5 * expected) & (kl < 1.5 * expected)).all(), (kl, expected)
    assert (stats["improvement"] >= 0).all()
    # Only the policy moved: value network and padding are bit-unchanged.
    policy = algo.policy_mask.bool()
    assert not torch.equal(after[:, policy], before[:, policy])
    assert torch.equal(after[:, ~policy], before[:, ~policy])


def test_value_fitting_leaves_the_policy_bit_unchanged(stepped):
    algo, batch, _, after, _ = stepped
    with torch.no_grad():
        algo.flat.copy_(after)
    value = algo.value_mask.bool()
    s = algo.settings
    snapshots = [algo.flat.detach().clone()]
    losses = []
    for _ in range(2):  # the second call starts with non-zero Adam moments on the value columns
        losses.append(fit_value(algo.agent, algo.optimizers["value_adam"], algo.value_mask, batch.obs,
                                batch.returns, s.vf_epochs, s.vf_minibatch_size, algo.ctx.sample_gens))
        snapshots.append(algo.flat.detach().clone())
    for a, b in zip(snapshots, snapshots[1:]):
        assert torch.equal(a[:, ~value], b[:, ~value])  # policy, log-std and padding: bit-unchanged
        assert not torch.equal(a[:, value], b[:, value])
    assert (losses[1] < losses[0]).all()  # the regression makes progress
    state = algo.optimizers["value_adam"].state[algo.flat]
    assert torch.equal(state["exp_avg"][:, ~value], torch.zeros_like(state["exp_avg"][:, ~value]))
    assert torch.equal(state["exp_avg_sq"][:, ~value], torch.zeros_like(state["exp_avg_sq"][:, ~value]))


# ---------------------------------------------------------------- group independence and resume


def test_records_do_not_depend_on_the_group():
    # line_search_accept=1 makes some steps backtrack, so the runs' line searches take different paths.
    cfg = config(total_steps=1024, horizon=256, trpo={"line_search_accept": 1.0})
    alone = train_group([RunSpec("target", "Hopper-v5", cfg, 7)], log=lambda _: None)[0]
    group = train_group([RunSpec(f"r{s}", "Hopper-v5", cfg, s) for s in (1, 7, 2)], log=lambda _: None)
    assert len(alone.episodes) > 3 and len(alone.updates) == 4
    assert_same_records(alone, group[1])
    tries = np.stack([r.updates["line_search_steps"].to_numpy() for r in group])
    assert tries.max() > 1 and len({tuple(t) for t in tries}) > 1  # backtracking happened, not the same in all


@pytest.fixture(scope="module")
def uninterrupted():
    torch.set_num_threads(1)  # module fixtures run before the autouse one-thread fixture of conftest.py
    specs = [RunSpec("a", "Hopper-v5", TINY, 0), RunSpec("b", "Hopper-v5", TINY, 1)]
    return train_group(specs, log=lambda _: None)


@pytest.mark.parametrize("target, name, after_calls", [
    (ppo.envs.lockstep.LockstepEnvs, "step", 256 * 2 + 31),  # inside the 3rd rollout
    (trpo, "conjugate_gradient", 3),  # inside the 3rd policy step, after its rollout
    (ppo.algorithms.base, "fit_value", 4),  # inside the 4th iteration's value fitting
])
def test_resume_gives_identical_records(tmp_path, monkeypatch, uninterrupted, target, name, after_calls):
    specs = [RunSpec("a", "Hopper-v5", TINY, 0), RunSpec("b", "Hopper-v5", TINY, 1)]
    resumed = kill_then_resume(monkeypatch, train_group, specs, tmp_path / "group.ckpt", target, name, after_calls)
    assert_same_records(uninterrupted, resumed)


def test_settings_are_validated():
    with pytest.raises(ValueError, match="max_kl"):
        TRPOSettings(max_kl=0)
    with pytest.raises(ValueError, match="line_search_accept"):
        TRPOSettings(line_search_accept=1.5)
    with pytest.raises(ValueError, match="fvp_subsample"):
        TRPOSettings(fvp_subsample=0)

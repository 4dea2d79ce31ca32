"""ACER (ppo/algorithms/acer.py): Retrace targets, truncated importance weights with bias correction and the
discrete trust region by hand; the loss wiring against a loop-by-loop recomputation; the average network and
the masked replay step; the frame buffer; runs independent of their group; resume; the preset on Pong."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from killing import kill_then_resume
from same_records import assert_same_records

import ppo.algorithms.acer
from ppo.algorithms.a2c import trust_region_projection
from ppo.algorithms.acer import (ACER, EPS, ReplayBuffer, Segment, collect_segment, decode_frames, encode_frames,
                                 gain_gradient_wrt_probs, importance_weights, kl_gradient_wrt_probs, retrace_targets)
from ppo.algorithms.rollout import GroupContext, group_context
from ppo.config.errors import ConfigError
from ppo.config.experiments import load_variant
from ppo.config.run_config import build_config
from ppo.envs import atari
from ppo.training.driver import RunSpec, train_group

F64 = torch.float64


def t64(x):
    return torch.tensor(x, dtype=F64)


# ---- the loss by hand


def test_retrace_targets_by_hand():
    """3 steps, the horizon ends after step 1 (d = 1): Q_ret(x_1) = r_1 alone, and x_0 bootstraps from it."""
    rewards, dones = t64([1.0, 2.0, 3.0]), t64([0.0, 1.0, 0.0])
    q_taken, values = t64([0.5, 1.0, 1.5]), t64([0.2, 0.4, 0.6, 0.8])  # V(x_0..x_3)
    rho, gamma = t64([0.5, 2.0, 0.25]), 0.9
    # t = 2: r_2 + γ V(x_3) = 3 + 0.9·0.8 = 3.72
    # t = 1: d_1 = 1, so r_1 = 2 (nothing after it)
    # t = 0: r_0 + γ [min(1, ρ_1)(Q_ret_1 − Q_1) + V_1] = 1 + 0.9·[1·(2 − 1) + 0.4] = 2.26
    expected = [2.26, 2.0, 3.72]
    assert retrace_targets(rewards, dones, q_taken, values, rho, gamma).tolist() == pytest.approx(expected, abs=1e-12)
    # ρ_1 < 1 shrinks the off-policy correction: ρ_1 = 0.5 gives 1 + 0.9·[0.5·1 + 0.4] = 1.81
    rho2 = t64([0.5, 0.5, 0.25])
    assert retrace_targets(rewards, dones, q_taken, values, rho2, gamma)[0].item() == pytest.approx(1.81, abs=1e-12)
    # without the done, step 1 bootstraps too: 2 + 0.9·[0.25·(3.72 − 1.5) + 0.6] = 3.0395
    no_done = retrace_targets(rewards, torch.zeros(3, dtype=F64), q_taken, values, rho, gamma)
    assert no_done[1].item() == pytest.approx(3.0395, abs=1e-12)
    # batched over leading dims, each row on its own
    batched = retrace_targets(*(torch.stack([x, x]) for x in (rewards, dones, q_taken, values, rho)), gamma)
    assert batched[1].tolist() == pytest.approx(expected, abs=1e-12)


def test_truncated_weight_and_bias_correction_by_hand():
    """Two actions, f = (0.8, 0.2), μ = (0.2, 0.8), c = 2: ρ = (4, 0.25)."""
    f, mu, q = t64([[0.8, 0.2]]), t64([[0.2, 0.8]]), t64([[1.0, 3.0]])
    v = 0.8 * 1.0 + 0.2 * 3.0  # V = Σ f Q = 1.4
    for action, weight_expected in [(0, 2.0), (1, 0.25)]:  # ρ(a_t) = 4 truncated to c = 2; 0.25 left as it is
        a = torch.tensor([action])
        rho, rho_taken, weight, correction = importance_weights(f, mu, a, c=2.0)
        assert rho[0].tolist() == pytest.approx([4.0, 0.25], rel=1e-5)
        assert weight.item() == pytest.approx(weight_expected, rel=1e-5)
        # [1 − c/ρ]₊: 1 − 2/4 = 0.5 for action 0 (whichever was taken); 1 − 2/0.25 < 0 → 0 for action 1
        assert correction[0].tolist() == pytest.approx([0.5, 0.0], rel=1e-5)
    # With a_t = 0 and Q_ret = 2: A = 0.6, gain = 2·0.6·log 0.8 + 0.5·0.8·(1 − 1.4)·log 0.8 (no term for action 1)
    a = torch.tensor([0])
    _, _, weight, correction = importance_weights(f, mu, a, c=2.0)
    weighted_adv = weight * (2.0 - v)
    bc_coef = correction * f * (q - v)
    assert bc_coef[0].tolist() == pytest.approx([-0.16, 0.0], rel=1e-5)
    gain = weighted_adv * (f[0, 0] + EPS).log() + (bc_coef * (f + EPS).log()).sum(-1)
    assert gain.item() == pytest.approx((1.2 - 0.16) * math.log(0.8), rel=1e-5)
    # ∂gain/∂f = (1.2/0.8 − 0.16/0.8, 0) = (1.3, 0), and with the entropy bonus c_e·∂H/∂f = −c_e(log f + 1)
    g = gain_gradient_wrt_probs(f, a, weighted_adv, bc_coef, ent_coef=0.0)
    assert g[0].tolist() == pytest.approx([1.3, 0.0], rel=1e-5)
    g = gain_gradient_wrt_probs(f, a, weighted_adv, bc_coef, ent_coef=0.01)
    assert g[0].tolist() == pytest.approx([1.3 - 0.01 * (math.log(0.8) + 1), -0.01 * (math.log(0.2) + 1)], rel=1e-5)


def test_gain_gradient_matches_autograd():
    gen = torch.Generator().manual_seed(0)
    f = torch.softmax(torch.randn(3, 7, 5, generator=gen, dtype=F64), -1)
    actions = torch.randint(5, (3, 7), generator=gen)
    weighted_adv, bc_coef = torch.randn(3, 7, generator=gen, dtype=F64), torch.randn(3, 7, 5, generator=gen, dtype=F64)
    leaf = f.clone().requires_grad_()
    logf = (leaf + EPS).log()
    objective = (weighted_adv * logf.gather(-1, actions[..., None]).squeeze(-1) + (bc_coef * logf).sum(-1)
                 - 0.01 * (leaf * logf).sum(-1)).sum()
    expected, = torch.autograd.grad(objective, leaf)
    assert torch.allclose(gain_gradient_wrt_probs(f, actions, weighted_adv, bc_coef, 0.01), expected, rtol=1e-12)


def test_discrete_trust_region_by_hand():
    f, f_avg, delta = t64([0.5, 0.5]), t64([0.8, 0.2]), 1.0
    k = kl_gradient_wrt_probs(f_avg, f)
    assert k.tolist() == pytest.approx([-1.6, -0.4], rel=1e-5)  # −f_avg/f
    leaf = f.clone().requires_grad_()
    kl = (f_avg * (f_avg.log() - (leaf + EPS).log())).sum()
    assert torch.allclose(k, torch.autograd.grad(kl, leaf)[0], rtol=1e-12)
    # active: kᵀg = 3.2 − 0.4 = 2.8 > δ, ‖k‖² = 2.72: z = g − (1.8/2.72)·k, on the constraint kᵀz = δ
    g = t64([-2.0, 1.0])
    z, active = trust_region_projection(g, k, delta)
    step = (float(k @ g) - delta) / float(k @ k)
    assert step == pytest.approx(1.8 / 2.72, rel=1e-5)
    # by hand: (−2 + 1.6·0.661765, 1 + 0.4·0.661765) = (−0.941176, 1.264706)
    assert active and z.tolist() == pytest.approx([-0.941176, 1.264706], rel=1e-5)
    assert float(k @ z) == pytest.approx(delta, abs=1e-12)
    # inactive: kᵀg = −2 ≤ δ, unchanged
    z, active = trust_region_projection(t64([1.0, 1.0]), k, delta)
    assert not active and z.tolist() == [1.0, 1.0]
    # Why the probabilities: at f = f_avg, k = −1 and the projection moves g along (1, 1), a direction the
    # softmax ignores, so the gradient that reaches the logits is unchanged (as with a KL gradient of 0).
    logits = t64([0.3, -0.2]).requires_grad_()
    p = torch.softmax(logits, -1)
    g = t64([-3.0, 0.5])
    z, active = trust_region_projection(g, kl_gradient_wrt_probs(p.detach(), p.detach()), delta)
    assert active  # kᵀg = 2.5 > δ: "active", yet
    grad_g, = torch.autograd.grad(p, logits, g, retain_graph=True)
    grad_z, = torch.autograd.grad(p, logits, z)
    assert torch.allclose(grad_g, grad_z, atol=1e-12)


# ---- a toy algorithm without environments: the network, buffer and steps on synthetic segments


def toy(num_runs=1, num_actions=3, **acer):
    cfg = build_config({"algorithm": "acer", "num_envs": 2, "horizon": 3, "total_steps": 60, "network": "cnn_mnih2016",
                        "env_protocol": "paper2017", "acer": {"buffer_size": 30, "replay_start": 6, **acer}}, "toy")
    ctx = GroupContext(configs=[cfg] * num_runs, seeds=[{}] * num_runs,
                       envs=SimpleNamespace(obs_shape=(4, 84, 84), num_actions=num_actions), family=atari.FAMILY,
                       log=None,
                       init_gens=[torch.Generator().manual_seed(g) for g in range(num_runs)],
                       sample_gens=[torch.Generator().manual_seed(100 + g) for g in range(num_runs)])
    return ACER(ctx)


def random_segment(G, E=2, T=3, A=3, seed=0) -> Segment:
    """Random frames in sliding stacks; actor 0 of every run starts a new stack at x_2 (as after a reset)."""
    gen = torch.Generator().manual_seed(seed)
    frames = torch.randint(0, 256, (G, E, T + 8, 84, 84), dtype=torch.uint8, generator=gen)
    obs = torch.stack([frames[:, :, t:t + 4] for t in range(T + 1)], 2)  # [G, E, T+1, 4, 84, 84]
    obs[:, 0, 2] = frames[:, 0, T + 4:T + 8]
    obs[:, 0, 3] = torch.cat([obs[:, 0, 2, 1:], frames[:, 0, 3:4]], 1)
    return Segment(obs=obs, actions=torch.randint(A, (G, E, T), generator=gen),
                   mu=torch.softmax(2 * torch.randn(G, E, T, A, generator=gen), -1),
                   rewards=torch.randint(-1, 2, (G, E, T), generator=gen).float(),
                   dones=torch.rand(G, E, T, generator=gen) < 0.3)


def test_loss_equals_a_loop_by_loop_recomputation():
    """The batched loss against the formulas written out per actor and step, in float64."""
    algo = toy(truncation_c=1.5, trust_region=False)
    gamma, c = algo.ctx.cfg.gamma, 1.5
    seg = random_segment(1, seed=3)
    with torch.no_grad():
        policy, q = algo.agent.evaluate(seg.obs.reshape(1, 8, 4, 84, 84))
    f, q = policy.logits.exp().view(2, 4, 3).double(), q.view(2, 4, 3).double()
    loss_f = loss_bc = loss_q = entropy = 0.0
    for e in range(2):
        v = [float(f[e, t] @ q[e, t]) for t in range(4)]
        ret, targets = v[3], [0.0] * 3
        for t in reversed(range(3)):
            a = int(seg.actions[0, e, t])
            rho = float(f[e, t, a] / (seg.mu[0, e, t, a] + EPS))
            ret = float(seg.rewards[0, e, t]) + gamma * (1 - float(seg.dones[0, e, t])) * ret
            targets[t] = ret
            ret = min(1.0, rho) * (ret - float(q[e, t, a])) + v[t]
        for t in range(3):
            a = int(seg.actions[0, e, t])
            rho = [float(f[e, t, b] / (seg.mu[0, e, t, b] + EPS)) for b in range(3)]
            loss_f -= min(c, rho[a]) * (targets[t] - v[t]) * math.log(f[e, t, a] + EPS) / 6
            loss_bc -= sum(max(0.0, 1 - c / (rho[b] + EPS)) * float(f[e, t, b]) * (float(q[e, t, b]) - v[t])
                           * math.log(f[e, t, b] + EPS) for b in range(3)) / 6
            loss_q += 0.5 * (targets[t] - float(q[e, t, a])) ** 2 / 6
            entropy -= sum(float(f[e, t, b]) * math.log(f[e, t, b] + EPS) for b in range(3)) / 6
    stats = algo.loss_and_gradient(seg)
    assert stats["loss_truncated"].item() == pytest.approx(loss_f, rel=1e-4, abs=1e-7)
    assert stats["loss_bias_correction"].item() == pytest.approx(loss_bc, rel=1e-4, abs=1e-7)
    assert loss_bc != 0.0  # some ρ(a) > c in this batch: the bias correction is exercised
    assert stats["q_loss"].item() == pytest.approx(loss_q, rel=1e-4)
    assert stats["entropy"].item() == pytest.approx(entropy, rel=1e-5)


def test_trust_region_with_unreachable_delta_is_the_plain_gradient():
    """δ = 10⁹: z* = g, so −z*/B back-propagated from f equals the gradient of the policy loss and entropy."""
    seg = random_segment(1, seed=4)
    plain, loose = toy(trust_region=False), toy(trust_region=True, trust_region_delta=1e9)
    for algo in (plain, loose):
        algo.loss_and_gradient(seg)
    assert torch.allclose(plain.flat.grad, loose.flat.grad, rtol=1e-4, atol=1e-8)
    assert plain.flat.grad.abs().max() > 0


def test_average_network_update_and_masked_step():
    """θ_avg ← α θ_avg + (1 − α) θ after every step; a run masked out of a replay step keeps its parameters,
    RMSprop state and average network bit for bit, and the active run steps exactly as in an unmasked step."""
    seg = random_segment(2, seed=5)
    algo, twin = toy(num_runs=2, average_policy_decay=0.9), toy(num_runs=2, average_policy_decay=0.9)
    for a in (algo, twin):
        a.step(seg)  # both: the same first step, every run
    assert torch.equal(algo.flat, twin.flat)
    before = algo.average.clone()
    theta0 = algo.flat.detach().clone()
    square0 = algo.optimizer.state[algo.flat]["square_avg"].clone()
    seg2 = random_segment(2, seed=6)
    algo.step(seg2, active=torch.tensor([True, False]))
    twin.step(seg2)
    # run 0 took the step, exactly as without the mask, and its average followed
    assert torch.equal(algo.flat[0], twin.flat[0]) and not torch.equal(algo.flat[0], theta0[0])
    assert torch.equal(algo.average[0], twin.average[0])
    torch.testing.assert_close(algo.average[0], 0.9 * before[0] + 0.1 * algo.flat[0].detach(), rtol=0, atol=1e-7)
    # run 1 did not move at all
    assert torch.equal(algo.flat[1], theta0[1]) and torch.equal(algo.average[1], before[1])
    assert torch.equal(algo.optimizer.state[algo.flat]["square_avg"][1], square0[1])
    assert not torch.equal(twin.flat[1], theta0[1])  # (it would have)


def test_average_network_starts_as_the_network():
    algo = toy(num_runs=2)
    assert torch.equal(algo.average, algo.flat.detach())
    # one step: θ_avg = α θ_0 + (1 − α) θ_1
    theta0 = algo.flat.detach().clone()
    algo.step(random_segment(2, seed=7))
    torch.testing.assert_close(algo.average, 0.99 * theta0 + 0.01 * algo.flat.detach(), rtol=0, atol=1e-7)


# ---- the replay buffer of raw frames


def test_frames_round_trip_whatever_the_environment_steps_between_stacks():
    """Stacks slide by one frame per agent step, by three after a lost life with the FIRE reset (the
    environment presses FIRE and action 2 itself), restart at a new game ([f, f, f1, f2] after the reset's FIRE
    steps), and a still screen repeats one frame: each is stored as the frames it adds, and read back exactly."""
    f = [torch.full((2, 2), i, dtype=torch.uint8) for i in range(40)]
    stacks = [f[0:4], f[1:5],  # an agent step: one new frame
              f[4:8],  # a lost life + FIRE + action 2: three new frames
              [f[20]] * 2 + f[21:23],  # a new game: the reset's frame repeated, then the FIRE reset's two
              f[20:21] + f[21:23] + f[23:24],  # one new frame again
              f[21:23] + [f[23]] * 2, f[22:23] + [f[23]] * 3, [f[23]] * 4]  # the screen stands still
    obs = torch.stack([torch.stack(x) for x in stacks])[None]  # [1, T+1 = 8, K = 4, 2, 2]
    frames, counts = encode_frames(obs)
    assert counts.tolist() == [[4, 1, 3, 4, 1, 1, 1, 1]] and frames.shape == (16, 2, 2)
    assert torch.equal(decode_frames(frames, counts, 4), obs)
    # two actors, encoded one after the other
    two = torch.cat([obs, obs.flip(1)])
    assert torch.equal(decode_frames(*encode_frames(two), 4), two)


def test_frames_of_a_real_breakout_rollout_round_trip():
    """Breakout under paper2017 (FIRE reset after every lost life): random play loses lives within these
    steps, and every stored segment comes back from the buffer exactly."""
    cfg = build_config({**SMALL.to_dict(), "horizon": 30, "acer": {"buffer_size": 60, "replay_start": 30}}, "test")
    ctx = group_context("ALE/Breakout-v5", [cfg, cfg], [0, 1])
    algo = ACER(ctx)
    segments = [collect_segment(ctx, algo.agent) for _ in range(4)]
    for seg in segments:
        algo.buffer.put(seg)
    assert any(seg.dones.any() for seg in segments)  # lives were lost
    counts = torch.cat([algo.buffer.segments[k]["counts"].flatten() for k in range(2)])
    assert (counts[counts != 4] == 1).sum() > 0 and (counts == 3).any()  # agent steps and FIRE resets
    for k in range(2):  # the ring holds the last two segments
        got = algo.buffer.get(torch.full((2, 2), k))
        seg = segments[2 + k]
        for name in ("obs", "actions", "mu", "rewards", "dones"):
            assert torch.equal(getattr(got, name), getattr(seg, name)), name
    crossed = algo.buffer.get(torch.tensor([[0, 1], [1, 0]]))  # each actor its own slot
    assert torch.equal(crossed.obs[0, 1], segments[3].obs[0, 1]) and torch.equal(crossed.obs[1, 0], segments[3].obs[1, 0])
    ctx.envs.close()


def test_buffer_is_a_ring_per_actor():
    buffer = ReplayBuffer(slots=2, frame_stack=4)
    segs = [random_segment(2, seed=s) for s in range(3)]
    for s in segs:
        buffer.put(s)
    assert len(buffer) == 2 and buffer.next == 1  # the third segment replaced the first
    got = buffer.get(torch.tensor([[0, 1], [1, 0]]))  # run 0: actor 0 from slot 0, actor 1 from slot 1; run 1 crosswise
    assert torch.equal(got.obs[0, 0], segs[2].obs[0, 0]) and torch.equal(got.obs[0, 1], segs[1].obs[0, 1])
    assert torch.equal(got.obs[1, 0], segs[1].obs[1, 0]) and torch.equal(got.mu[1, 1], segs[2].mu[1, 1])
    assert torch.equal(got.actions[1, 0], segs[1].actions[1, 0]) and got.actions.dtype == torch.int64


# ---- whole runs on Pong

# 2 actors × 5 steps per iteration, 8 iterations; replay from the 2nd (2 segments per actor), ring of 4 segments
SMALL = build_config({"algorithm": "acer", "total_steps": 80, "num_envs": 2, "horizon": 5, "network": "cnn_mnih2016",
                      "env_protocol": "paper2017", "acer": {"buffer_size": 20, "replay_start": 10}}, "test")


def test_records_do_not_depend_on_the_group(monkeypatch):
    """Run t alone and beside another run: the same actions, μ close, the same replay counts; the losses
    agree to float tolerance only, because a grouped convolution may sum in another order (tests/nn/test_convnet.py)."""
    segments, real = [], ppo.algorithms.acer.collect_segment

    def spy(ctx, agent):
        segments.append(real(ctx, agent))
        return segments[-1]

    monkeypatch.setattr(ppo.algorithms.acer, "collect_segment", spy)
    alone = train_group([RunSpec("t", "ALE/Pong-v5", SMALL, 7)], log=lambda _: None)[0]
    other, shared = train_group([RunSpec("o", "ALE/Pong-v5", SMALL, 1), RunSpec("t", "ALE/Pong-v5", SMALL, 7)],
                                log=lambda _: None)
    for seg1, seg2 in zip(segments[:8], segments[8:]):
        assert torch.equal(seg1.actions[0], seg2.actions[1]) and torch.equal(seg1.obs[0], seg2.obs[1])
        torch.testing.assert_close(seg1.mu[0], seg2.mu[1], rtol=1e-4, atol=1e-6)
    a, b = alone.updates, shared.updates
    assert len(a) == 8 and a["replay_updates"].iloc[1:].sum() > 0 and a["replay_updates"].iloc[0] == 0
    assert a["replay_updates"].tolist() == b["replay_updates"].tolist()
    # the two runs of the group drew different replay counts somewhere: the masked steps were exercised
    assert (other.updates["replay_updates"] != b["replay_updates"]).any()
    pd.testing.assert_frame_equal(alone.episodes, shared.episodes, check_exact=True)
    assert a["global_step"].tolist() == b["global_step"].tolist() == [10 * (i + 1) for i in range(8)]
    # explained variance is 1 − Var[res]/Var[ret]: the ratio carries float error relative to itself, and near
    # ev = 0 the difference from 1 turns that into a large relative error of ev; compare the ratio instead
    ev = "explained_variance"
    np.testing.assert_allclose(1 - a[ev], 1 - b[ev], rtol=1e-4)
    pd.testing.assert_frame_equal(a.drop(columns=ev), b.drop(columns=ev), check_exact=False, rtol=1e-4, atol=1e-5)


def test_resume_after_kill_is_bit_identical(tmp_path, monkeypatch):
    specs = [RunSpec("a", "ALE/Pong-v5", SMALL, 0), RunSpec("b", "ALE/Pong-v5", SMALL, 1)]
    uninterrupted = train_group(specs, log=lambda _: None)
    # killed inside the 6th rollout: the buffer has wrapped and replay runs since the 2nd iteration
    resumed = kill_then_resume(monkeypatch, train_group, specs, tmp_path / "group.ckpt",
                               ppo.algorithms.acer, "collect_segment", 6)
    assert all(r.updates["replay_updates"].sum() > 0 for r in uninterrupted)  # replay took part in both runs
    assert_same_records(uninterrupted, resumed)


def test_variant_on_pong_replays():
    """The preset (16 actors × 20 steps) for 3 iterations, replay from the 2nd: Poisson(4) replay steps,
    global_step counting only the on-policy steps."""
    cfg = load_variant("atari_acer", total_steps=960, acer={"replay_start": 40}).config
    assert cfg.acer.buffer_size == 50_000 and cfg.acer.replay_ratio == 4 and cfg.num_envs * cfg.horizon == 320
    (result,) = train_group([RunSpec("a", "ALE/Pong-v5", cfg, 0)], log=lambda _: None)
    u = result.updates
    assert result.status == "completed" and u["global_step"].tolist() == [320, 640, 960]
    assert u["replay_updates"].iloc[0] == 0 and u["replay_updates"].iloc[1:].sum() > 0
    assert u["entropy"].iloc[0] == pytest.approx(np.log(6), abs=1e-3)  # near-uniform start over Pong's 6 actions
    assert u["rho_mean"].iloc[0] == pytest.approx(1.0, abs=1e-4)  # on-policy: f = μ
    assert u[["q_loss", "policy_loss", "kl_average", "trust_region_active", "grad_norm"]].notna().all().all()


def test_acer_settings_are_checked():
    base = {"algorithm": "acer", "network": "cnn_mnih2016", "env_protocol": "paper2017"}
    only_cnn = r"acer is implemented with network\(s\) \['cnn_mnih2016', 'cnn_nature'\], not 'mlp'"
    with pytest.raises(ConfigError, match=only_cnn):
        build_config({"algorithm": "acer"}, "test")
    with pytest.raises(ConfigError, match="replay_start 60000 exceeds buffer_size"):
        build_config({**base, "acer": {"replay_start": 60000}}, "test")
    with pytest.raises(ConfigError, match="acer.truncation_c must be > 0"):
        build_config({**base, "acer": {"truncation_c": 0}}, "test")
    with pytest.raises(ConfigError, match="section ppo is for algorithm ppo; this config's algorithm is acer"):
        build_config({**base, "ppo": {"epochs": 3}}, "test")
    with pytest.raises(ValueError, match="time_limit 'terminal' only"):
        ACER(SimpleNamespace(cfg=build_config({**base, "time_limit": "bootstrap"}, "test"),
                             envs=SimpleNamespace(obs_shape=(4, 84, 84), num_actions=3), num_runs=1))


@pytest.mark.parametrize("optimizer", ["rmsprop_tf", "rmsprop"])
def test_a_run_masked_out_of_the_very_first_step_keeps_its_optimizer_state(optimizer):
    """torch's RMSprop makes its mean square at the first step, TF-style's has it from the start (ones): a run
    masked out of that first step keeps what it had (zeros for torch's, ones for TF-style's)."""
    algo = toy(num_runs=2, optimizer=optimizer)
    theta0 = algo.flat.detach().clone()
    algo.step(random_segment(2, seed=8), active=torch.tensor([True, False]))
    assert torch.equal(algo.flat[1], theta0[1]) and not torch.equal(algo.flat[0], theta0[0])
    start = 1.0 if optimizer == "rmsprop_tf" else 0.0
    assert torch.equal(algo.optimizer.state[algo.flat]["square_avg"][1], torch.full_like(theta0[1], start))

"""Relations of a random output in their three forms (`holds`, `equals`, `within`, each with an
optional `where`), a check that runs only `when:` an attribute condition holds, and the
`numel_at_least` kind, on the shipped aclnnRReluWithNoise spec: in training each element of self
below 0 draws a slope in [lower, upper] into noise (1 where self > 0) and out = self * noise.

Expected values are written by hand: the bfloat16 neighbours of 0.1 (0.10009765625 is the nearest,
0.099609375 the next one down: 2^-10 steps in [2^-4, 2^-3)) and products of exact binary fractions.
"""

from __future__ import annotations

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, Outcome, ScalarArg, TensorArg
from aclnn_conformance.conformance.cases.build import Case
from aclnn_conformance.conformance.cases.negatives import negative_plans
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.run.judging import _within, judge
from aclnn_conformance.conformance.spec.interpret import validate
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.backend import ReferenceBackend

REG = default_registry()
SPEC = REG.get("rrelu_with_noise")
ORACLE = ReferenceBackend(REG)
X = [-3.0, -0.5, 0.0, 2.0, -7.25, 1.5, -1.0, 4.0]


def _call(dtype: str = "BF16", training: bool = True, noise_shape=(8,), lower=0.1, upper=0.3):
    return Call("rrelu_with_noise", "atlas-a2", {
        "self": TensorArg.from_array(np.array(X), dtype),
        "noise": TensorArg.from_array(np.full(noise_shape, 5.0), dtype),
        "lower": ScalarArg("FLOAT", lower), "upper": ScalarArg("FLOAT", upper),
        "training": training, "seed": 0, "offset": 0,
        "out": TensorArg.empty_like_shape((8,), dtype, fill=np.nan)})  # fmt: skip


def _case(call: Call) -> Case:
    return Case("hand/relations/0", "rrelu_with_noise", call.product, "positive", call, (), 0, 0)


class _Writes(Backend):
    """A backend that writes the given noise and out (as the call's dtype)."""

    capabilities = Capabilities(status="exact")
    name = "writes"

    def __init__(self, noise, out):
        super().__init__(REG)
        self.noise, self.out = noise, out

    def execute(self, call: Call) -> Outcome:
        ty = call.tensor("out").storage.dtype
        return Outcome(0, {"noise": np.array(self.noise, ty), "out": np.array(self.out, ty)}, "")


def _judged(noise, out, call=None):
    call = call or _call()
    return judge(SPEC, _case(call), _Writes(noise, out), ORACLE)


GOOD_NOISE = [0.25, 0.125, 1.0, 1.0, 0.2, 1.0, 0.296875, 1.0]  # in [0.1, 0.3], 1 where self >= 0
GOOD_OUT = [-0.75, -0.0625, 0.0, 2.0, -1.45, 1.5, -0.296875, 4.0]  # self * noise, rounded (-1.45)


def test_a_valid_draw_passes_every_relation():
    got = _judged(GOOD_NOISE, GOOD_OUT)
    assert got.verdict == "pass", got.reason
    assert got.record.comparisons["noise"]["relations"] == [
        "noise-one-where-positive", "noise-in-range", "noise-at-zero"]  # fmt: skip


def test_within_widens_each_bound_to_the_dtypes_next_value_outward():
    # BF16 steps: 2^-11 in [2^-4, 2^-3), 2^-9 in [2^-2, 2^-1). 0.1 rounds up to 0.10009765625,
    # one step down is 0.099609375 (the widened low end; 0.09912109375 is past it); 0.3 rounds
    # up to 0.30078125, one step up is 0.302734375 (the widened high end; 0.3046875 is past it)
    v = np.array([0.099609375, 0.09912109375, 0.302734375, 0.3046875, 0.2])
    ok = _within("BF16", v, 0.1, 0.3)
    assert ok.tolist() == [True, False, True, False, True]
    # FLOAT: the float32 neighbours of 0.1 (float32(0.1) > 0.1; one step below it is < 0.1)
    f = np.float32(0.1)
    below = float(np.nextafter(f, np.float32(-1)))
    two_below = float(np.nextafter(np.float32(below), np.float32(-1)))
    assert _within("FLOAT", np.array([below, two_below]), 0.1, 0.3).tolist() == [True, False]


def test_a_draw_outside_the_range_fails_naming_the_relation_and_the_element():
    noise = list(GOOD_NOISE)
    noise[4] = 0.3125  # self[4] < 0: above upper even widened (0.302734375 for BF16)
    out = list(GOOD_OUT)
    out[4] = -7.25 * 0.3125
    got = _judged(noise, out)
    assert got.verdict == "fail"
    assert got.reason.startswith("noise: relation rrelu_with_noise/noise-in-range")
    assert "fails at 1 of 8 elements, first at [4]" in got.reason


def test_equals_is_judged_under_the_outputs_policy():
    out = list(GOOD_OUT)
    out[3] = 2.0078125  # one BF16 step above 2 (2^-8 relative): within the 4e-3 policy
    assert _judged(GOOD_NOISE, out).verdict == "pass"
    out[3] = 2.0
    out[0] = -0.75 * 1.03  # 3 % off at one element of 8: past max_ratio
    got = _judged(GOOD_NOISE, out)
    assert got.verdict == "fail"
    assert got.reason.startswith("out: relation rrelu_with_noise/out-is-self-times-noise")
    assert got.record.differs == "values"


def test_where_limits_a_relation_to_its_elements():
    noise = list(GOOD_NOISE)
    noise[2] = 0.2  # self[2] == 0: a draw (the doc, PyTorch) is valid there, as is 1 (the code)
    assert _judged(noise, GOOD_OUT).verdict == "pass"
    noise[3] = 0.2  # self[3] > 0 must keep 1
    got = _judged(noise, GOOD_OUT)
    assert got.verdict == "fail" and "noise-one-where-positive" in got.reason


def test_in_eval_the_values_are_compared_and_noise_is_kept():
    call = _call(training=False)
    ref = ORACLE.execute(call)
    assert ref.outputs["noise"].astype(np.float64).tolist() == [5.0] * 8  # not written
    slope = (np.float64(np.float32(0.1)) + np.float64(np.float32(0.3))) / 2
    want = np.array([x if x > 0 else x * slope for x in X])
    np.testing.assert_allclose(ref.outputs["out"].astype(np.float64), want, rtol=2**-8)
    assert _judged(GOOD_NOISE, GOOD_OUT, call).verdict == "fail"  # a draw is wrong in eval


@pytest.mark.parametrize("training, status", [(True, 161002), (False, 0)])
def test_a_check_with_when_runs_only_where_its_condition_holds(training, status):
    v = validate(SPEC, _call(training=training, noise_shape=(7,)))  # 7 < 8 elements of self
    assert v.status == status
    if status:
        assert v.check.id == "noise-size" and "noise has 7 elements" in v.message
    assert validate(SPEC, _call(training=True, noise_shape=(2, 4))).status == 0  # 8: enough
    assert validate(SPEC, _call(training=True, noise_shape=(3, 3))).status == 0  # more


def test_numel_at_least_negatives_shrink_the_tensor_below_the_bound():
    base = {n: a for n, a in _call("FLOAT").args.items()}
    plans = [p for p in negative_plans(SPEC, "atlas-a2", base) if "noise-size" in p.clauses]
    shapes = sorted(tuple(dict(p.args)["noise"].shape) for p in plans)
    assert shapes == [(1,), (7,)]


@pytest.mark.gates
def test_replay_says_a_random_output_was_judged_by_its_relations():
    from tests.support.runcli import assert_clean, conform

    proc = conform("replay", "rrelu_with_noise/atlas-a2/bf16/training=1/values=normal")
    assert_clean(proc, 0)
    text = proc.stdout
    assert "relations noise-one-where-positive, noise-in-range, noise-at-zero: hold" in text
    assert "relations out-is-self-times-noise: hold" in text


@pytest.mark.gates
def test_an_atk_file_gives_an_in_out_tensors_input_values(tmp_path):
    """An ATK input naming an inout tensor (noise) is its input value, not an output to map."""
    import json

    from tests.support.runcli import assert_clean, conform

    def tensor(name, dtype, shape):
        return {"name": name, "type": "tensor", "required": True, "dtype": dtype,
                "shape": shape, "range_values": [-2, 2]}  # fmt: skip

    def attr(name, kind, dtype, value):
        return {"name": name, "type": kind, "required": True, "dtype": dtype, "shape": None,
                "range_values": value}  # fmt: skip

    case = {"id": 0, "name": "rrelu", "aclnn_name": "RReluWithNoise",
            "inputs": [tensor("x", "fp32", [4, 3]), tensor("noise", "fp32", [4, 3]),
                       attr("lower", "scalar", "fp32", [0, 0.2]),
                       attr("upper", "scalar", "fp32", [0.2, 0.5]),
                       attr("training", "attr", "bool", False), attr("seed", "attr", "int", 5),
                       attr("offset", "attr", "int", 0)]}  # fmt: skip
    src = tmp_path / "atk_aclnnRReluWithNoise.json"
    src.write_text(json.dumps([case]), encoding="utf-8")
    out = tmp_path / "cases"
    proc = conform("cases", "import-atk", str(src), "-o", str(out))
    assert_clean(proc, 0)
    assert "1 accepted" in proc.stdout
    res = tmp_path / "r.jsonl"
    assert_clean(conform("run", "--cases", str(out), "--results", str(res), "-q"), 0)
    (rec,) = [json.loads(x) for x in res.read_text(encoding="utf-8").splitlines()]
    assert rec["verdict"] == "pass" and "noise" in rec["dtypes"]


INPLACE = REG.get("inplace_rrelu_with_noise")


class _WritesInPlace(Backend):
    """The in-place API: writes the given noise and self (self's storage holds the result)."""

    capabilities = Capabilities(status="exact")
    name = "writes-in-place"

    def __init__(self, noise, self_after):
        super().__init__(REG)
        self.noise, self.after = noise, self_after

    def execute(self, call: Call) -> Outcome:
        ty = call.tensor("self").storage.dtype
        return Outcome(0, {"noise": np.array(self.noise, ty), "self": np.array(self.after, ty)}, "")


def _inplace_call() -> Call:
    return Call("aclnnInplaceRReluWithNoise", "atlas-a2", {
        "self": TensorArg.from_array(np.array(X), "BF16"),
        "noise": TensorArg.from_array(np.full((8,), 5.0), "BF16"),
        "lower": ScalarArg("FLOAT", 0.1), "upper": ScalarArg("FLOAT", 0.3),
        "training": True, "seed": 0, "offset": 0})  # fmt: skip


@pytest.mark.parametrize(
    ("after", "verdict"),
    [(GOOD_OUT, "pass"), (X, "fail"), ([v * 2 for v in GOOD_OUT], "fail")],
    ids=["self-times-noise", "self-unchanged", "twice"],
)
def test_the_in_place_tensor_is_read_as_it_was_before_the_call(after, verdict):
    """aclnnInplaceRReluWithNoise: self after = self before x noise. The relation reads the
    in-place tensor's value before the call (spec.inplace_tensor) and judges its written value:
    writing the product passes; leaving self unchanged, or writing twice the product, fails
    (were self read after the call, self = self x noise would fail the right answer and pass
    an unchanged self wherever noise is 1)."""
    assert INPLACE.inplace_tensor == "self"
    call = _inplace_call()
    case = Case("hand/relations/1", INPLACE.name, call.product, "positive", call, (), 0, 0)
    got = judge(INPLACE, case, _WritesInPlace(GOOD_NOISE, after), ORACLE)
    assert got.verdict == verdict, got.reason
    if verdict == "fail":
        assert "out-is-self-times-noise" in got.reason

"""Bad checkpoints through ``lidframe score --checkpoint``, ``--attacker ecapa?checkpoint=...`` and ``train-attacker --init``.

Checkpoints load weights-only: a file that pickles anything but tensors is refused, and
the code it pickles never runs (each malicious file here would create ``ran.txt``).
"""

from __future__ import annotations

import pickle
import zipfile

import pytest

torch = pytest.importorskip("torch", reason="checkpoints are torch files (pip install -e '.[audio]')")
pytest.importorskip("soundfile", reason="audio is read with soundfile (pip install -e '.[audio]')")

from lidframe.attackers.ecapa_model import EcapaTdnnModel  # noqa: E402
from lidframe.attackers.xvector_model import XvectorModel  # noqa: E402
from lidframe.cli import main  # noqa: E402
from tests.bad_input.audio_dirs import ATTACKER, SMALL_ECAPA, score_argv, scoring_dirs, write_data_dir  # noqa: E402
from tests.bad_input.conftest import assert_refused  # noqa: E402
from tests.voices import write_voice  # noqa: E402


class RunsCode:
    """Unpickling this calls ``open(path, "w")``: a file appears if pickled code ever runs."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def small_state(**changes):
    torch.manual_seed(0)
    return EcapaTdnnModel(**{**SMALL_ECAPA, **changes}).state_dict()


@pytest.fixture
def dirs(tmp_path):
    """(enrol, trials, checkpoint folder): the data, and a folder for the broken checkpoints."""
    enrol, trials = scoring_dirs(tmp_path / "data")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    return enrol, trials, folder


def refuse_score(tmp_path, capsys, dirs, checkpoint, expect, *, via_spec=False):
    enrol, trials, _ = dirs
    if via_spec:
        argv = score_argv(enrol, trials, tmp_path / "out.npz", attacker=f"{ATTACKER}&checkpoint={checkpoint}")
    else:
        argv = score_argv(enrol, trials, tmp_path / "out.npz", "--checkpoint", checkpoint)
    line = assert_refused(argv, capsys, expect=expect, watch=[tmp_path])
    assert not (tmp_path / "ran.txt").exists(), "pickled code ran"
    return line


# ----------------------------------------------------------- files that are not checkpoints
@pytest.mark.parametrize("via_spec", [False, True], ids=["--checkpoint", "ecapa?checkpoint="])
def test_missing_checkpoint(tmp_path, capsys, dirs, via_spec):
    refuse_score(
        tmp_path, capsys, dirs, dirs[2] / "gone.ckpt", ["gone.ckpt", "no such checkpoint file"], via_spec=via_spec
    )


def test_folder_instead_of_checkpoint(tmp_path, capsys, dirs):
    refuse_score(tmp_path, capsys, dirs, dirs[2], [str(dirs[2]), "is a folder", "expected a checkpoint file"])


def test_empty_checkpoint_file(tmp_path, capsys, dirs):
    (dirs[2] / "empty.ckpt").write_bytes(b"")
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "empty.ckpt", ["empty.ckpt", "empty file (0 bytes)"])


def test_garbage_bytes(tmp_path, capsys, dirs):
    (dirs[2] / "junk.ckpt").write_bytes(b"definitely not a torch file \x00\x01\x02" * 30)
    line = refuse_score(
        tmp_path, capsys, dirs, dirs[2] / "junk.ckpt", ["junk.ckpt", "not a weights-only torch checkpoint"]
    )
    assert "weights_only` set to `False`" not in line  # torch's advice to load it unsafely is not passed on


def test_truncated_torch_file(tmp_path, capsys, dirs):
    torch.save(small_state(), dirs[2] / "full.ckpt")
    data = (dirs[2] / "full.ckpt").read_bytes()
    (dirs[2] / "cut.ckpt").write_bytes(data[: len(data) // 2])
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "cut.ckpt", ["cut.ckpt", "corrupt"])


def test_a_zip_that_is_not_a_torch_file(tmp_path, capsys, dirs):
    with zipfile.ZipFile(dirs[2] / "other.ckpt", "w") as archive:
        archive.writestr("readme.txt", "hello")
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "other.ckpt", ["other.ckpt", "corrupt"])


# ----------------------------------------------------------- not weights-only: refused, nothing runs
@pytest.mark.parametrize("via_spec", [False, True], ids=["--checkpoint", "ecapa?checkpoint="])
def test_torch_file_pickling_a_callable_is_refused_without_running_it(tmp_path, capsys, dirs, via_spec):
    torch.save({"weight": RunsCode(tmp_path / "ran.txt")}, dirs[2] / "evil.ckpt")
    refuse_score(
        tmp_path,
        capsys,
        dirs,
        dirs[2] / "evil.ckpt",
        ["evil.ckpt", f"refused: the checkpoint pickles {open.__module__}.open", "weights only"],
        via_spec=via_spec,
    )


def test_plain_pickle_is_refused_without_running_it(tmp_path, capsys, dirs):
    with open(dirs[2] / "plain.ckpt", "wb") as handle:
        pickle.dump({"weight": RunsCode(tmp_path / "ran.txt")}, handle)
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "plain.ckpt", ["plain.ckpt", "not a weights-only torch checkpoint"])


def test_a_whole_pickled_module_is_refused(tmp_path, capsys, dirs):
    torch.save(EcapaTdnnModel(**SMALL_ECAPA), dirs[2] / "module.ckpt")  # torch.save(model), not its state dict
    refuse_score(
        tmp_path,
        capsys,
        dirs,
        dirs[2] / "module.ckpt",
        ["module.ckpt", "refused: the checkpoint pickles lidframe.attackers.ecapa_model.EcapaTdnnModel"],
    )


def test_numpy_arrays_are_refused(tmp_path, capsys, dirs):
    torch.save({k: v.numpy() for k, v in small_state().items()}, dirs[2] / "numpy.ckpt")
    refuse_score(
        tmp_path, capsys, dirs, dirs[2] / "numpy.ckpt", ["numpy.ckpt", "refused: the checkpoint pickles numpy."]
    )


# ----------------------------------------------------------- torch files of the wrong content
@pytest.mark.parametrize(
    "content",
    [[1, 2, 3], {"weight": 1.5}, torch.zeros(3)],
    ids=["list", "dict-of-floats", "bare-tensor"],
)
def test_not_a_state_dict_of_tensors(tmp_path, capsys, dirs, content):
    torch.save(content, dirs[2] / "shape.ckpt")
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "shape.ckpt", ["shape.ckpt", "expected a state dict of tensors"])


def test_wrong_keys_an_xvector_checkpoint_for_ecapa(tmp_path, capsys, dirs):
    torch.save(XvectorModel(tdnn_channels=[8, 8, 8, 8, 16], lin_neurons=8).state_dict(), dirs[2] / "xvec.ckpt")
    refuse_score(
        tmp_path,
        capsys,
        dirs,
        dirs[2] / "xvec.ckpt",
        ["xvec.ckpt", "does not fit the EcapaTdnn", "missing keys", "unexpected keys"],
    )


def test_wrong_shapes_another_channel_configuration(tmp_path, capsys, dirs):
    torch.save(small_state(channels=(32, 32, 32, 32, 96)), dirs[2] / "wide.ckpt")
    refuse_score(tmp_path, capsys, dirs, dirs[2] / "wide.ckpt", ["wide.ckpt", "shapes do not fit the EcapaTdnn"])


def test_a_matching_checkpoint_scores(tmp_path, capsys, dirs):
    """The control: the same small configuration's own state dict is accepted."""
    torch.save(small_state(), dirs[2] / "good.ckpt")
    enrol, trials, _ = dirs
    code = main(
        [str(a) for a in score_argv(enrol, trials, tmp_path / "out.npz", "--checkpoint", dirs[2] / "good.ckpt")]
    )
    assert code == 0, capsys.readouterr().err


# ----------------------------------------------------------- train-attacker --init and its resume state
XVEC = "xvector?tdnn_channels=8,8,8,8,16&lin_neurons=8"


def train_argv(tmp_path, *extra):
    wavs = tmp_path / "wav"
    wavs.mkdir(exist_ok=True)
    entries = [
        (f"u{s}{k}", f"spk{s}", write_voice(wavs / f"u{s}{k}.wav", s, k, 0.5)) for s in range(2) for k in range(2)
    ]
    data = write_data_dir(tmp_path / "train", entries)
    (tmp_path / "out").mkdir(exist_ok=True)  # the checkpoint's folder exists, as every command's output folder must
    args = ["train-attacker", "--arch", XVEC, "--data", data, "--out", tmp_path / "out" / "x.ckpt"]
    return [*args, "--epochs", "1", "--batch-size", "2", "--device", "cpu", *extra]


def test_train_init_missing(tmp_path, capsys):
    argv = train_argv(tmp_path, "--init", tmp_path / "gone.ckpt")
    assert_refused(argv, capsys, expect=["gone.ckpt", "no such checkpoint file"], watch=[tmp_path])
    assert list((tmp_path / "out").iterdir()) == []


def test_train_init_pickling_code_is_refused_without_running_it(tmp_path, capsys):
    torch.save({"weight": RunsCode(tmp_path / "ran.txt")}, tmp_path / "evil.ckpt")
    argv = train_argv(tmp_path, "--init", tmp_path / "evil.ckpt")
    assert_refused(
        argv, capsys, expect=["evil.ckpt", f"refused: the checkpoint pickles {open.__module__}.open"], watch=[tmp_path]
    )
    assert not (tmp_path / "ran.txt").exists()


def test_train_init_wrong_architecture(tmp_path, capsys):
    torch.save(small_state(), tmp_path / "ecapa.ckpt")  # an ECAPA checkpoint to fine-tune an x-vector
    argv = train_argv(tmp_path, "--init", tmp_path / "ecapa.ckpt")
    assert_refused(argv, capsys, expect=["ecapa.ckpt", "does not fit the XVector"], watch=[tmp_path])


def test_train_init_wrong_shapes(tmp_path, capsys):
    torch.save(XvectorModel(tdnn_channels=[16, 16, 16, 16, 32], lin_neurons=8).state_dict(), tmp_path / "wide.ckpt")
    argv = train_argv(tmp_path, "--init", tmp_path / "wide.ckpt")
    assert_refused(argv, capsys, expect=["wide.ckpt", "shapes do not fit the XVector"], watch=[tmp_path])


@pytest.mark.parametrize("content", [b"garbage", None], ids=["garbage", "not-a-training-state"])
def test_train_corrupt_resume_state(tmp_path, capsys, content):
    (tmp_path / "out").mkdir()
    state = tmp_path / "out" / "x.ckpt.state"
    if content is None:
        torch.save({"model": {}}, state)
    else:
        state.write_bytes(content)
    argv = train_argv(tmp_path)
    assert_refused(argv, capsys, expect=["x.ckpt.state", "training state"], watch=[tmp_path])

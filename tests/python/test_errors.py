"""Status codes become Python exceptions naming the operator; Ctrl-C stops iteration."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import sluice
from sluice.data import Dataset


def test_exception_hierarchy():
    assert issubclass(sluice.InvalidArgumentError, ValueError)
    assert issubclass(sluice.NotFoundError, FileNotFoundError)
    assert issubclass(sluice.OutOfRangeError, IndexError)
    for cls in [sluice.DataLossError, sluice.CancelledError, sluice.NotFoundError,
                sluice.InvalidArgumentError, sluice.InternalError]:
        assert issubclass(cls, sluice.Error)
    with pytest.raises(sluice.DataLossError, match="crc mismatch at 12") as e:
        sluice._sluice._raise_status(15, "crc mismatch at 12")
    assert e.value.code == "DataLoss"


def test_missing_file_is_not_found(tmp_path):
    missing = str(tmp_path / "nope.tfrecord")
    with pytest.raises(FileNotFoundError, match="nope.tfrecord"):
        list(sluice.data.TFRecordDataset(missing))
    # Like tf.data: a pattern matching nothing is an invalid argument.
    with pytest.raises(sluice.InvalidArgumentError, match="no files match"):
        Dataset.list_files(str(tmp_path / "*.none"))


def test_corrupt_record_is_data_loss(tmp_path):
    p = tmp_path / "bad.tfrecord"
    p.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00garbage-crc-and-payload")
    with pytest.raises(sluice.DataLossError, match="bad.tfrecord"):
        list(sluice.data.TFRecordDataset(str(p)))


def test_kernel_error_names_operator_and_kernel():
    ds = Dataset.from_tensor_slices([b"not a jpeg"]).map(sluice.image.decode_jpeg())
    with pytest.raises(sluice.InvalidArgumentError) as e:
        list(ds)
    msg = str(e.value)
    assert "decode_jpeg" in msg and "Map" in msg, msg


def test_construction_errors_raise_early():
    with pytest.raises(sluice.InvalidArgumentError, match="[Bb]atch"):
        Dataset.range(3).batch(0)
    with pytest.raises(sluice.InvalidArgumentError):
        Dataset.from_tensor_slices((list(range(3)), list(range(4))))


SCRIPT = textwrap.dedent("""
    import signal, sys, threading, time
    # Python installs its KeyboardInterrupt handler only when SIGINT is not ignored at
    # start-up; under a background job (CI) it is, so put the interactive default back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sluice

    def slow(x):
        time.sleep(3)   # a long call on a pipeline thread; the consumer waits in GetNext
        return x

    ds = sluice.data.Dataset.range(10).map(slow, num_parallel_calls=1).prefetch(1)
    try:
        print("iterating", flush=True)
        for x in ds:
            print("got", x, flush=True)
    except KeyboardInterrupt:
        # The iterator is gone: the call that was running finished, no other started.
        print("KeyboardInterrupt", flush=True)
        sys.exit(7)
    print("finished without interrupt", flush=True)
""")


def test_ctrl_c_interrupts_blocked_iteration():
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "iterating"
        time.sleep(1.0)  # now blocked inside GetNext
        assert p.poll() is None
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 7, (out, err)
    assert "KeyboardInterrupt" in out and "got" not in out, (out, err)
    # The consumer returns at once; closing the iterator waits for the running call (at
    # most 3 s) and starts no other. Uninterrupted, the loop would take 30 s.
    assert elapsed < 10, elapsed


def test_cancel_then_next_raises():
    it = iter(Dataset.range(100).prefetch(2))
    next(it)
    it.cancel()
    with pytest.raises(sluice.CancelledError):
        for _ in range(100):
            next(it)


def test_misspelled_kernel_attribute_names_the_valid_one():
    # It was accepted and ignored: layout stayed CHW.
    with pytest.raises(sluice.InvalidArgumentError,
                       match=r"unknown attribute 'layuot'; did you mean 'layout'\?"):
        sluice.kernel("normalize", mean=[0.5], std=[0.5], layuot="HWC")
    with pytest.raises(sluice.NotFoundError, match=r"did you mean 'normalize'\?"):
        sluice.kernel("normalise", mean=[0.5], std=[0.5])


NEVER_SCRIPT = textwrap.dedent("""
    import signal, sys, threading, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sluice

    # A filter that never lets anything through, over an endless input: the pipeline
    # thread loops inside the filter without ever producing.
    ds = sluice.data.Dataset.range(10).repeat().filter(lambda x: False)
    if sys.argv[1] == "sigint":
        try:
            print("iterating", flush=True)
            for x in ds:
                print("got", x, flush=True)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(7)
    else:
        it = iter(ds)
        threading.Timer(0.5, it.cancel).start()
        try:
            next(it)
        except sluice.CancelledError:
            print("cancelled", flush=True)
        if sys.argv[1] == "close":
            it.close()   # joins the pipeline's threads
        else:
            del it
        print("closed", flush=True)
        sys.exit(7)
""")


@pytest.mark.parametrize("how", ["sigint", "close", "del"])
def test_never_producing_filter_stops(how):
    # Ctrl-C, close() and del stop a pipeline whose filter never yields (they used to
    # leave its thread looping, so the interpreter hung).
    p = subprocess.Popen([sys.executable, "-c", NEVER_SCRIPT, how], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        if how == "sigint":
            assert p.stdout.readline().strip() == "iterating"
            time.sleep(1.0)  # the filter is looping
            assert p.poll() is None
            p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 7, (out, err)
    expected = {"sigint": "KeyboardInterrupt", "close": "closed", "del": "closed"}[how]
    assert expected in out, (out, err)


BETWEEN_SCRIPT = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import sluice

    # Python work between elements: the signal arrives outside `next`, where sluice's
    # stand-in SIGINT handler passes it straight to Python.
    try:
        print("iterating", flush=True)
        for x in sluice.data.Dataset.range(10**9):
            t = time.perf_counter()
            while time.perf_counter() - t < 0.001:
                pass
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(7)
""")


def test_sigint_between_elements_raises_keyboard_interrupt():
    p = subprocess.Popen([sys.executable, "-c", BETWEEN_SCRIPT], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert p.stdout.readline().strip() == "iterating"
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 7, (out, err)
    assert "KeyboardInterrupt" in out

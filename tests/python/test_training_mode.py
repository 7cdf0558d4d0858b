import threading

import weft as mx
from weft.base import _api


def test_modes_nest_and_restore():
    assert not mx.autograd.is_training()
    with mx.autograd.train_mode():
        assert mx.autograd.is_training()
        with mx.autograd.predict_mode():
            assert not mx.autograd.is_training()
        assert mx.autograd.is_training()
    assert not mx.autograd.is_training()


def test_set_training_returns_the_previous_mode():
    assert mx.autograd.set_training(True) is False
    assert mx.autograd.set_training(False) is True
    assert _api.weft_is_training() == 0


def test_mode_restored_after_an_exception():
    try:
        with mx.autograd.train_mode():
            raise KeyError("inside")
    except KeyError:
        pass
    assert not mx.autograd.is_training()


def test_mode_belongs_to_the_thread():
    seen = []
    with mx.autograd.train_mode():
        t = threading.Thread(target=lambda: seen.append(mx.autograd.is_training()))
        t.start()
        t.join()
        assert mx.autograd.is_training()
    assert seen == [False]

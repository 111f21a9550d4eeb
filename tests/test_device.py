"""Devices, their attributes, and synchronize, on the GPU."""
import threading

import pytest

import cukit

pytestmark = pytest.mark.gpu


def test_device_properties():
    d = cukit.Device(0)
    assert d is cukit.Device(0)
    assert d.ordinal == 0 and d.__index__() == 0
    assert isinstance(d.name, str) and d.name
    major, minor = d.compute_capability
    assert major >= 3 and 0 <= minor <= 9
    assert d.arch == f"sm_{major}{minor}"
    assert d.total_memory > 1 << 30
    assert d.multiprocessor_count > 0
    assert "Device 0" in repr(d)


def test_attributes_by_readable_name():
    d = cukit.Device(0)
    attrs = d.attributes
    assert len(attrs) > 100
    assert attrs["multiprocessor_count"] == d.multiprocessor_count
    assert attrs["compute_capability_major"] == d.compute_capability[0]
    assert attrs["max_threads_per_block"] == 1024
    assert attrs["warp_size"] == 32


def test_missing_device_is_a_value_error():
    with pytest.raises(ValueError, match="there is no CUDA device 99"):
        cukit.Device(99)


def test_current_device_and_synchronize():
    assert cukit.get_device() is cukit.Device(0)
    assert cukit.Device() is cukit.get_device()
    assert cukit.Device(0).use() is cukit.Device(0)
    cukit.synchronize()
    cukit.Device(0).synchronize()
    assert cukit.driver_version() >= (12, 0)


def test_a_new_thread_gets_the_context_on_first_use():
    errors = []

    def work():
        try:
            a = cukit.zeros(16, "f4")
            assert (a.get() == 0).all()
            cukit.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors

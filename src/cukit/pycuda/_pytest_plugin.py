"""A pytest plugin that `python -m cukit.pycuda -m pytest` loads: it registers the
`cuda` marker that PyCUDA's mark_cuda_test puts on tests."""


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: a test that needs a CUDA device (PyCUDA's mark)")

"""What a CuPy or numpy user types in the first minutes, each checked against numpy: the
families of the census of real CuPy code in the arrays issue (advanced indexing, shape
and layout, creation, math and statistics, numpy's names, numpy's legacy random API,
streams and timing, fft, linalg, numpy's protocols). One small call each; the thorough
tests of each family are in their own files."""

import pickle

import numpy as np
import pytest

import cukit

idx = np.array([0, 2, 5])
cols = np.array([1, 3, 4])
h = a = w = dw = seed = None


def setup_module():
    """Fresh data for each run, made when the tests run (not at collection); a failing
    habit names the seed, so that its data can be made again."""
    global h, a, w, dw, seed
    seed = np.random.SeedSequence().entropy
    r = np.random.default_rng(seed)
    h = r.standard_normal((6, 5)).astype(np.float32)
    a = cukit.asarray(h)
    w = h[:5] + 5 * np.eye(5, dtype=np.float32)  # well conditioned
    dw = cukit.asarray(w)


def g(x):
    return x.get() if hasattr(x, "get") else x


def written(key, value):
    """b[key(b)] = value on a copy of a and of h, compared."""
    b, hb = a.copy(), h.copy()
    b[key(b)] = value
    hb[key(hb)] = value
    return np.allclose(g(b), hb)


def in_stream():
    """Work inside `with stream:` runs there (CuPy's habit)."""
    with cukit.Stream() as s:
        b = a + 1
    s.synchronize()
    return np.allclose(g(b), h + 1)


def _raises(fn, exc):
    try:
        fn()
    except exc:
        return True
    return False


HABITS = {
    "a[idx]": lambda: np.allclose(g(a[cukit.asarray(idx)]), h[idx]),
    "a[rows, cols]": lambda: np.allclose(g(a[idx, cols]), h[idx, cols]),
    "a[mask] = v": lambda: written(lambda x: x > 0, 0),
    "a[idx] = v": lambda: written(lambda x: idx, 1),
    "a[a > 0]": lambda: np.allclose(g(a[a > 0]), h[h > 0]),
    "a[rows, cols] = v": lambda: written(lambda x: (idx, cols), 2),
    "ravel": lambda: np.allclose(g(a.ravel()), h.ravel()),
    "flatten": lambda: np.allclose(g(a.flatten()), h.flatten()),
    "view": lambda: np.array_equal(g(a.view(np.int32)), h.view(np.int32)),
    "reshape": lambda: np.allclose(g(cukit.reshape(a, (5, 6))), h.reshape(5, 6)),
    "tile": lambda: np.allclose(g(cukit.tile(a, 2)), np.tile(h, 2)),
    "repeat": lambda: np.allclose(g(cukit.repeat(a, 2, 0)), np.repeat(h, 2, 0)),
    "swapaxes": lambda: np.allclose(g(cukit.swapaxes(a, 0, 1)), np.swapaxes(h, 0, 1)),
    "transpose": lambda: np.allclose(g(cukit.transpose(a)), h.T),
    "expand_dims": lambda: np.allclose(g(cukit.expand_dims(a, 0)), h[None]),
    "squeeze": lambda: np.allclose(g(cukit.squeeze(a[None])), h),
    "moveaxis": lambda: np.allclose(g(cukit.moveaxis(a, 0, 1)), h.T),
    "pad": lambda: np.allclose(g(cukit.pad(a, 1)), np.pad(h, 1)),
    "roll": lambda: np.allclose(g(cukit.roll(a, 2)), np.roll(h, 2)),
    "hstack": lambda: np.allclose(g(cukit.hstack([a, a])), np.hstack([h, h])),
    "atleast_1d": lambda: np.allclose(g(cukit.atleast_1d(a)), h),
    "asfortranarray": lambda: np.allclose(g(cukit.asfortranarray(a)), h),
    "diagonal": lambda: np.allclose(g(cukit.diagonal(a)), np.diagonal(h)),
    "copyto": lambda: (lambda b: (cukit.copyto(b, a), np.allclose(g(b), h))[-1])(
        cukit.empty_like(a)
    ),
    "eye": lambda: np.allclose(g(cukit.eye(3)), np.eye(3)),
    "diag": lambda: np.allclose(g(cukit.diag(a)), np.diag(h)),
    "meshgrid": lambda: all(
        np.allclose(g(x), y)
        for x, y in zip(
            cukit.meshgrid(cukit.arange(3), cukit.arange(2)),
            np.meshgrid(np.arange(3), np.arange(2)),
        )
    ),
    "mgrid": lambda: np.allclose(g(cukit.mgrid[0:3, 0:2]), np.mgrid[0:3, 0:2]),
    "array": lambda: np.allclose(g(cukit.array(h)), h),
    "asnumpy": lambda: np.allclose(cukit.asnumpy(a), h),
    "get_array_module": lambda: cukit.get_array_module(a) is cukit,
    "nonzero": lambda: all(
        np.array_equal(g(x), y) for x, y in zip(cukit.nonzero(a > 0), np.nonzero(h > 0))
    ),
    "where(cond)": lambda: all(
        np.array_equal(g(x), y) for x, y in zip(cukit.where(a > 0), np.where(h > 0))
    ),
    "round": lambda: np.allclose(g(cukit.round(a, 2)), np.round(h, 2)),
    "around": lambda: np.allclose(g(cukit.around(a, 2)), np.around(h, 2)),
    "diff": lambda: np.allclose(g(cukit.diff(a)), np.diff(h)),
    "bincount": lambda: np.array_equal(g(cukit.bincount(cukit.asarray(idx))), np.bincount(idx)),
    "median": lambda: np.allclose(g(cukit.median(a)), np.median(h)),
    "einsum": lambda: np.allclose(
        g(cukit.einsum("ij,kj->ik", a, a)), np.einsum("ij,kj->ik", h, h), atol=1e-4
    ),
    "iscomplexobj": lambda: cukit.iscomplexobj(a) is False,
    "Array.sort": lambda: (lambda b: (b.sort(), np.allclose(g(b), np.sort(h)))[-1])(a.copy()),
    "argsort": lambda: np.array_equal(g(a.argsort()), h.argsort()),
    "float32": lambda: cukit.float32 is np.float32,
    "int32": lambda: cukit.int32 is np.int32,
    "complex64": lambda: cukit.complex64 is np.complex64,
    "pi": lambda: cukit.pi == np.pi,
    "newaxis": lambda: cukit.newaxis is None,
    "inf": lambda: cukit.inf == np.inf,
    "nan": lambda: np.isnan(cukit.nan),
    "copy(a)": lambda: np.allclose(g(cukit.copy(a)), h),
    "random.rand": lambda: cukit.random.rand(3, 4).shape == (3, 4)
    and cukit.random.rand(3, 4).dtype == np.float64,
    "random.randn": lambda: cukit.random.randn(3, 4).shape == (3, 4),
    "random.random": lambda: cukit.random.random(5).shape == (5,),
    "random.randint": lambda: cukit.random.randint(0, 5, 7).shape == (7,),
    "random.normal": lambda: cukit.random.normal(0, 1, 5).shape == (5,),
    "random.uniform": lambda: cukit.random.uniform(0, 1, 5).shape == (5,),
    "random.choice": lambda: cukit.random.choice(10, 3, replace=False).shape == (3,),
    "random.permutation": lambda: sorted(g(cukit.random.permutation(10)).tolist())
    == list(range(10)),
    "random.shuffle": lambda: (
        lambda b: (cukit.random.shuffle(b), sorted(g(b).tolist()) == list(range(10)))[-1]
    )(cukit.arange(10)),
    "random.seed": lambda: (cukit.random.seed(1), True)[-1],
    "with stream": lambda: in_stream(),
    "Stream.null": lambda: cukit.Stream.null is not None,
    "Device.id": lambda: cukit.Device(0).id == 0,
    "benchmark": lambda: cukit.benchmark(lambda x: x + 1, (a,), n_repeat=3) is not None,
    "fft.fft": lambda: np.allclose(g(cukit.fft.fft(a)), np.fft.fft(h), atol=1e-4),
    "fft.fftshift": lambda: np.allclose(g(cukit.fft.fftshift(a)), np.fft.fftshift(h)),
    "fft.fftfreq": lambda: np.allclose(g(cukit.fft.fftfreq(8)), np.fft.fftfreq(8)),
    "fft.fftn": lambda: np.allclose(g(cukit.fft.fftn(a)), np.fft.fftn(h), atol=1e-4),
    "fft.fft2/ifft2": lambda: np.allclose(g(cukit.fft.ifft2(cukit.fft.fft2(a))), h, atol=1e-5),
    "fft.ifftshift": lambda: np.allclose(g(cukit.fft.ifftshift(a)), np.fft.ifftshift(h)),
    "fft.ifftn": lambda: np.allclose(g(cukit.fft.ifftn(a)), np.fft.ifftn(h), atol=1e-5),
    "linalg.norm": lambda: np.allclose(g(cukit.linalg.norm(a, 2)), np.linalg.norm(h, 2), rtol=1e-4),
    "linalg.inv": lambda: np.allclose(
        g(cukit.linalg.inv(dw)), np.linalg.inv(w), rtol=1e-4, atol=1e-5
    ),
    "linalg.svd": lambda: np.allclose(
        g(cukit.linalg.svd(a, compute_uv=False)), np.linalg.svd(h, compute_uv=False), rtol=1e-4,
        atol=1e-5 * np.abs(h).max()  # float32: a small singular value's error is absolute
    ),
    "linalg.eigh": lambda: np.allclose(
        g(cukit.linalg.eigvalsh(a[:5] @ a[:5].T)),
        np.linalg.eigvalsh(h[:5] @ h[:5].T),
        rtol=1e-3,
        atol=1e-4,
    ),
    "linalg.det": lambda: np.allclose(g(cukit.linalg.det(dw)), np.linalg.det(w), rtol=1e-4),
    "np.asarray(a) raises": lambda: _raises(lambda: np.asarray(a), TypeError),
    "print(a)": lambda: str(a) == str(h),
    "np.exp(a)": lambda: np.allclose(g(np.exp(a)), np.exp(h)),
    "np.concatenate": lambda: np.allclose(g(np.concatenate([a, a])), np.concatenate([h, h])),
    "pickle": lambda: np.allclose(g(pickle.loads(pickle.dumps(a))), h),
    "flags.c_contiguous": lambda: a.flags.c_contiguous is True,
}


@pytest.mark.parametrize("name", sorted(HABITS))
def test_habit(name):
    assert HABITS[name](), f"{name} (random seed: {seed})"

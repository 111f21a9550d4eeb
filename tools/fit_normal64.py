"""The polynomials of cukit's float64 Box-Muller transform (random_kernels.c): Chebyshev
fits at 50 digits (mpmath), near minimax, printed as the kernel's constant arrays,
highest degree first (Horner's order), with each fit's largest error.

    log(m) = 2 atanh(s) = 2 s + s z Q(z),  z = s * s,  |s| <= (sqrt(2) - 1) / (sqrt(2) + 1)
    sin(y) = y + y z P(z),  cos(y) = 1 + z C(z),  z = y * y,  |y| <= pi / 4

Q takes 7 terms, P 6 and C 7: then each function is within 2**-56 of itself (relative),
well under the half unit in the last place that rounding adds. The Taylor series had 10,
8 and 8 terms.

Usage (needs mpmath, a developer's tool; not part of cukit):
    python tools/fit_normal64.py [--terms Q=7,P=6,C=7]
"""
import argparse

import mpmath as mp


def q_of(z):
    """(2 atanh(s) - 2 s) / (s z), s = sqrt(z)."""
    if z == 0:
        return mp.mpf(2) / 3
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) - 2 * s) / (s * z)


def p_of(z):
    """(sin(y) - y) / (y z), y = sqrt(z)."""
    if z == 0:
        return -mp.mpf(1) / 6
    y = mp.sqrt(z)
    return (mp.sin(y) - y) / (y * z)


def c_of(z):
    """(cos(y) - 1) / z, y = sqrt(z)."""
    if z == 0:
        return -mp.mpf(1) / 2
    y = mp.sqrt(z)
    return (mp.cos(y) - 1) / z


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--terms", default="Q=7,P=6,C=7")
    terms = dict((k, int(v)) for k, v in (p.split("=") for p in ap.parse_args().terms.split(",")))
    mp.mp.dps = 50
    # the intervals a little wider than needed, so that rounding at their ends stays inside
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
    widen = 1 + mp.mpf(2) ** -20
    fits = (("Q", "ck_atanh_c", q_of, smax ** 2 * widen),
            ("P", "ck_sin_c", p_of, (mp.pi / 4) ** 2 * widen),
            ("C", "ck_cos_c", c_of, (mp.pi / 4) ** 2 * widen))
    for name, array, f, top in fits:
        n = terms[name]
        coefs, err = mp.chebyfit(f, [0, top], n, error=True)
        rel = err / abs(f(0))
        print(f"// {name}: {n} terms on [0, {mp.nstr(top, 6)}], largest error {mp.nstr(err, 3)} "
              f"(2**{mp.nstr(mp.log(rel, 2), 4)} of it)")
        print(f"__constant__ double {array}[{n}] = {{{', '.join(repr(float(c)) for c in coefs)}}};")


if __name__ == "__main__":
    main()

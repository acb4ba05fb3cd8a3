"""The six body traits derived from a creation seed.

``digest = SHA-256(b"quineling-traits:" + seed as 4 big-endian bytes)``. Trait *i* (in the order
``length, girth, curl, hue, gait, temper``) reads the big-endian 16-bit word ``w = digest[2i:2i+2]``
(0..65535) and maps it onto −1000..1000 as ``w * 2001 // 65536 − 1000``.

Examples: seed 0 → ``length=806 girth=644 curl=-32 hue=-862 gait=-244 temper=707``;
seed 4294967295 → ``length=167 girth=-359 curl=-147 hue=-60 gait=-510 temper=393``.
"""

from __future__ import annotations

import hashlib

from quineling.runtime.fields import UINT32_MAX
from quineling.runtime.program import TRAIT_MAX, TRAIT_MIN, TRAITS

_PREFIX = b"quineling-traits:"
_SPAN = TRAIT_MAX - TRAIT_MIN + 1  # 2001 possible values


def traits_from_seed(seed: int) -> dict[str, int]:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= UINT32_MAX:
        raise ValueError("seed must be a uint32")
    digest = hashlib.sha256(_PREFIX + seed.to_bytes(4, "big")).digest()
    return {
        name: int.from_bytes(digest[2 * i : 2 * i + 2], "big") * _SPAN // 65536 + TRAIT_MIN
        for i, name in enumerate(TRAITS)
    }

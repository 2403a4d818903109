"""Two Content-Security-Policies made one, the strictest of both (pure).

A response may carry its own policy (the reclaimer's status page allows only its stylesheet's
hash and no framing) while the web config's `http_server_config.headers` names another for every
response. Setting the configured one over the page's would drop the page's restrictions, so
`combine(first, second)` returns a policy that allows only what *both* allow, directive by
directive (CSP3, w3.org/TR/CSP3: directives are `name value...` separated by `;`, a repeated
directive is ignored, fetch directives fall back to `default-src`):

- A fetch directive (`script-src`, `style-src`, `img-src`, ...) is compared with what each policy
  effectively says for it: its own value, else its fallback (`script-src-elem` -> `script-src`
  -> `default-src`), else nothing (unrestricted). The result keeps a source of one side only when
  the other side allows it: the same token, `*` (for host and scheme sources, not for keywords,
  hashes, nonces or `data:`/`blob:`/`filesystem:`), or `'unsafe-inline'` (for a hash or nonce, when
  that side lists no hash or nonce of its own). Nothing left is `'none'`. Host matching (`'self'`
  against `https://host`, wildcards in hosts) is not modelled: what cannot be shown allowed by both
  is dropped, so the result is never looser than either policy, at worst stricter.
- `base-uri`, `form-action` and `frame-ancestors` (source lists without fallback) intersect the
  same way when both have them; when one has it, it is kept.
- `sandbox` keeps only the `allow-*` flags both give; other directives (reporting,
  `upgrade-insecure-requests`, ...) are kept from the first policy that has them.
"""

from __future__ import annotations

_FETCH_FALLBACK = {
    "script-src-elem": "script-src",
    "script-src-attr": "script-src",
    "style-src-elem": "style-src",
    "style-src-attr": "style-src",
    "worker-src": "child-src",
    "frame-src": "child-src",
    **dict.fromkeys(
        (
            "child-src",
            "connect-src",
            "font-src",
            "img-src",
            "manifest-src",
            "media-src",
            "object-src",
            "script-src",
            "style-src",
        ),
        "default-src",
    ),
}
_SOURCE_LISTS = frozenset({"base-uri", "form-action", "frame-ancestors"})
_NOT_BY_STAR = ("data:", "blob:", "filesystem:")
_INLINE_MARKS = ("'sha256-", "'sha384-", "'sha512-", "'nonce-")

Policy = dict[str, tuple[str, ...]]  # directive -> its tokens, in the header's order


def parse(header: str) -> Policy:
    """Directives of one policy header; names lower-cased, a repeated directive ignored."""
    policy: Policy = {}
    for part in header.split(";"):
        tokens = part.split()
        if tokens and tokens[0].lower() not in policy:
            policy[tokens[0].lower()] = tuple(tokens[1:])
    return policy


def render(policy: Policy) -> str:
    return "; ".join(" ".join((name, *tokens)) for name, tokens in policy.items())


def _effective(policy: Policy, directive: str) -> tuple[str, ...] | None:
    """What `policy` says for a fetch directive, following fallbacks; None: unrestricted."""
    name: str | None = directive
    while name is not None:
        if name in policy:
            return policy[name]
        name = _FETCH_FALLBACK.get(name)
    return None


def _allows(sources: tuple[str, ...], token: str) -> bool:
    """Whether a source list certainly allows what `token` allows."""
    lowered = {s.lower() for s in sources}
    if token.lower() in lowered:
        return token.lower() != "'none'"
    if token.startswith("'") and token.lower().startswith(_INLINE_MARKS):
        own_marks = any(s.startswith(_INLINE_MARKS) for s in lowered)
        return "'unsafe-inline'" in lowered and not own_marks
    is_keyword = token.startswith("'")
    return "*" in lowered and not is_keyword and not token.lower().startswith(_NOT_BY_STAR)


def _intersect(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> tuple[str, ...]:
    if a is None or b is None:
        only = a if b is None else b
        return only if only is not None else ()
    kept: list[str] = []
    for token in (*[t for t in a if _allows(b, t)], *[t for t in b if _allows(a, t)]):
        if token.lower() not in {k.lower() for k in kept}:
            kept.append(token)
    return tuple(kept) or ("'none'",)


def _sandbox(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(flag for flag in a if flag.lower() in {f.lower() for f in b})


def combine(first: str, second: str) -> str:
    """Pure: one policy allowing only what both `first` and `second` allow (module docstring)."""
    a, b = parse(first), parse(second)
    out: Policy = {}
    for name in [*a, *(n for n in b if n not in a)]:
        if name == "default-src" or name in _FETCH_FALLBACK:
            out[name] = _intersect(_effective(a, name), _effective(b, name))
        elif name in _SOURCE_LISTS:
            out[name] = _intersect(a.get(name), b.get(name))
        elif name == "sandbox" and name in a and name in b:
            out[name] = _sandbox(a[name], b[name])
        else:
            out[name] = a[name] if name in a else b[name]
    return render(out)

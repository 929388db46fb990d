"""What an endpoint may receive: the access levels whose text may leave this machine for a model.

An ``llm`` generator entry declares ``may_receive`` (public by default). An
endpoint on this machine (the bundled model, a loopback address) receives
anything: the text never leaves. One off the machine receives only what its
entry declares, and a caller who reads more is refused before any request,
at planning (rag.config) and in ``rag ask``.
"""

from __future__ import annotations

from collections.abc import Mapping


def loopback_endpoint(base_url: str) -> bool:
    """Whether an llm entry's endpoint runs on this machine: the bundled model, or a loopback host."""
    import ipaddress
    import urllib.parse

    from rag.kinds import BUNDLED_ENDPOINT
    from rag.models.client import LOOPBACK_HOSTS

    if base_url == BUNDLED_ENDPOINT:
        return True
    host = urllib.parse.urlsplit(base_url).hostname or ""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_receives_too_much(name: str, entry: Mapping, caller: str, view: Mapping) -> str | None:
    """Why ``caller``'s text may not go to generator ``name``, or None.

    An endpoint off this machine receives only the access levels its entry
    declares in ``may_receive`` (public by default); a caller who reads more
    would send that text to it. Loopback endpoints receive anything: the text
    never leaves the machine.
    """
    from rag.corpus.documents import ACCESS_LEVELS

    where = f"config['generators'][{name!r}]['may_receive']"
    unknown = sorted(set(entry["may_receive"]) - set(ACCESS_LEVELS))
    if unknown:
        return f"{where}: {unknown[0]!r} is not an access level; the levels are {', '.join(ACCESS_LEVELS)}"
    if loopback_endpoint(entry["base_url"]):
        return None
    above = [
        level for level in ACCESS_LEVELS if level in view["access"] and level not in entry["may_receive"]
    ]
    if not above:
        return None
    import urllib.parse

    host = urllib.parse.urlsplit(entry["base_url"]).hostname or "?"  # never the URL: it may hold a key
    return (
        f"caller {caller!r} reads {', '.join(level for level in ACCESS_LEVELS if level in view['access'])} "
        f"documents, but generator {name!r} sends its prompts off this machine (to {host}) and may receive "
        f"only {', '.join(entry['may_receive'])}; declare may_receive in config['generators'][{name!r}] "
        f"if that endpoint may receive {', '.join(above)} text, or answer as a caller who reads less"
    )

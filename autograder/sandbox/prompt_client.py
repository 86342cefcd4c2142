"""PromptKernelClient: jupyter_client's kernel client, ready as soon as a forked kernel answers."""

import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient

FIRST_WAIT, LAST_WAIT = 0.02, 1.0  # seconds IOPub is given to deliver an idle status: doubled after each miss


class PromptKernelClient(AsyncKernelClient):
    """jupyter_client's client, ready as soon as the kernel's IOPub has reported idle after a kernel_info request,
    instead of after 0.2 s in which IOPub said nothing (0.2 of the 0.28 s a forked kernel took to start).

    The kernel sends that idle status right after its reply, but IOPub drops it while the client's subscription is
    still on its way (ZeroMQ's PUB socket keeps nothing for a subscriber it does not know yet). So a missed idle is
    not awaited for long: the next request is sent after FIRST_WAIT, then after twice that, and so on. Waiting a
    whole second for the lost status had stalled one kernel start in twelve by 1.0 s."""

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        sent, wait = set(), FIRST_WAIT
        while True:
            request = self.kernel_info()
            sent.add(request)
            reply = await _first(self.shell_channel, lambda r: r["parent_header"].get("msg_id") == request, 1.0)
            if reply and await _first(self.iopub_channel, lambda m: _idle_after(m, sent), wait):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
            wait = min(2 * wait, LAST_WAIT)

    wait_for_ready = _async_wait_for_ready  # (AsyncKernelClient binds the name to KernelClient's own)


def _idle_after(msg: dict, requests: set) -> bool:
    """Whether ``msg`` is IOPub's idle status after one of ``requests``."""
    return (
        msg["msg_type"] == "status"
        and msg["parent_header"].get("msg_id") in requests
        and msg["content"].get("execution_state") == "idle"
    )


async def _first(channel, matches, seconds: float):
    """The first message ``channel`` delivers within ``seconds`` that ``matches``, those before it passed over; None
    when none comes in time."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            msg = await channel.get_msg(timeout=left)
        except Empty:
            return None
        if matches(msg):
            return msg
    return None

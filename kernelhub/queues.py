"""The Celery queue names, in one place (workers, placement, dashboard and settings use them).

`search`: session loops, problem coverage and document ingestion; `gpu.<target>`: the
evaluations of one hardware target (one worker per GPU)."""

SEARCH_QUEUE = "search"
GPU_QUEUE_PREFIX = "gpu."


def gpu_queue(target: str) -> str:
    return f"{GPU_QUEUE_PREFIX}{target}"


def is_gpu_queue(queue: str) -> bool:
    return queue.startswith(GPU_QUEUE_PREFIX)


def target_of(queue: str) -> str:
    """The hardware target a `gpu.<target>` queue serves ('' for other queues)."""
    return queue[len(GPU_QUEUE_PREFIX):] if is_gpu_queue(queue) else ""

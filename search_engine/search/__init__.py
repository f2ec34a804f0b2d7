"""Tree search over kernels: the tree, MCTS and evolutionary policies, node memory operators,
TRLOO credit, typed events and the loop.

How a caller (the CLI, the web app's session runner, a test) drives a search::

    from search_engine.search import SearchConfig, SearchRunner
    from search_engine.synthesis.offline import OfflineSynthesizer   # or synthesis.llm

    runner = SearchRunner(problem_source, "h200", OfflineSynthesizer(), executor,
                          SearchConfig(strategy="mcts", budget=12, seed=0),
                          context=provider,        # a ContextProvider (knowledge base)
                          on_event=store_and_publish,  # gets every event dict, in order
                          session=str(session_id))
    outcome = runner.run()        # blocking; pause()/resume()/cancel() from other threads

    # after a restart: rebuild from the stored node dicts and go on numbering events
    runner = SearchRunner.from_nodes(rows, problem_source, "h200", synthesizer, executor,
                                     config, next_seq=last_seq + 1, on_event=...)

Schemas: node dicts in tree.py, events in events.py. The executor is anything with
`submit(EvaluationRequest) -> Future[EvaluationResult]` (search_engine.protocols).
"""

from search_engine.search.loop import SearchConfig, SearchOutcome, SearchRunner, run_search
from search_engine.search.tree import Node, SearchTree

__all__ = ["SearchConfig", "SearchOutcome", "SearchRunner", "run_search", "Node", "SearchTree"]

"""The weak-model delegation suite (issue 10): tasks, scripted weak models, and the driver.

- :mod:`weak_models.tasks`: the suite, independent of the model: a workspace with a secret
  word and agent files, a prompt, and the success check.
- :mod:`weak_models.policies`: scripted misbehaviours of small local models, each deciding
  every answer from the request alone (messages, tools offered, ``response_format``).
- :mod:`weak_models.server`: an OpenAI-compatible server on 127.0.0.1 that answers with a
  policy; it knows nothing of ``subagents`` (it runs the same against any version of it).
- :mod:`weak_models.driver`: runs the suite through ``Runtime.run`` with the tree on
  ``PYTHONPATH`` (the only module here that imports ``subagents``).

``bench/bench_weak_models.py`` runs the driver against two trees and prints the comparison.
"""

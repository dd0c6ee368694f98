"""Differential conformance (``mqtck diff``): two targets in lockstep on generated operation sequences.

* :mod:`.steps`: the step vocabulary (one operation on a target, what it observed);
* :mod:`.program`: a sequence of steps over its topics, and the Hypothesis strategy that draws one;
* :mod:`.compare`: what is compared, what is never observed, and a pair's ``[[diff]]`` rules;
* :mod:`.settings`: how the in-process reference runs against an implementation (its ``[[reference]]`` entries);
* :mod:`.runner`: the lockstep run and the search that shrinks the first divergence;
* :mod:`.replay`: the side-by-side listing, the replay file and the emitted pytest test.
"""

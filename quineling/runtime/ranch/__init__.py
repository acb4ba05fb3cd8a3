"""The ranch: offspring, lineage, annotation and the one world.

Operations (``ops.OPERATIONS``): ``offspringPreview``, ``offspringFrame``, ``offspringAdmit``, ``lineage``,
``annotate``, ``worldCreate``, ``worldInspect``, ``worldCommand``. Every handler is pure: it reads state
documents through the view and stages writes, and the runtime commits them once (re-running on a conflict).
Exactly-once effects come from reading the receipt/world documents a decision depends on and writing them in
the same change set.

State documents (kind, id) owned by this package:

* ``("receipt", <requestId>)`` — an admission receipt ``{requestId, payloadHash, acknowledgement}``;
  store quota ``admission-receipts`` (+1 each, ``limits.max_admission_receipts`` = 128); never evicted.
* ``("lineage", "main")`` — the derivation index ``{count, bytes, entries: [{index, child, parents}]}``;
  caps ``max_derivations`` / ``max_derivation_bytes`` / ``max_lineage_bytes`` checked in the handler (the
  index's version check makes that race-free).
* ``("derivation", "<index>")`` — one derivation ``{index, childArtifactId, parents, recipe, nonce,
  mutation, overrides, origin, requestId, target}``.
* ``("world", "main")`` — the world: public snapshot fields plus private ``counters``, ``profiles`` and
  ``pairs`` (see :mod:`.world_state`); residents/nursery/pairs/proposals/events/size caps are checked in the
  handlers against ``RuntimeLimits``.
* ``("world-receipts", <worldId>)`` — ``{"<sequence>": {payloadHash, acknowledgement}}``, the newest
  ``max_world_receipts`` (256) kept, oldest discarded.

Also touched: ``("artifact", id)`` through :func:`quineling.runtime.library.stage_artifact` (quotas
``artifacts`` and ``artifact-bytes``) when a child is admitted or an intent is annotated.

Modules: ``specs`` (closed request records), ``recipes`` (program combination), ``heredity`` (traits),
``offspring`` (candidate build and verification), ``offspring_ops`` (preview/frame/admit), ``lineage``,
``annotate``, ``world_state`` (world document), ``courtship`` (ticks and scoring), ``world_commands``,
``world_birth`` (admission into a world), ``world`` (create/inspect/command and sequence ordering).
"""

"""The lab's side of the rules: what the lab can run, what it offers instead, what it answers.

- `feasibility`: the grounded seven-dimension check of a protocol (`check_feasibility`);
- `counter_proposal`: the revised protocol the lab offers for a plan that fails it
  (`suggest_alternative`);
- `answers`: the Lab Manager's factual answers to the Scientist's questions (`answer_questions`).

Each is a pure function of the protocol and the scenario pack. The episode, the judge and the
reference Lab Manager (`replicalab.agents.lab_manager_policy`) all read them from here; what the
lab charges lives one floor down, in `replicalab.prices`.
"""

"""ReplicaLab as a verifiers multi-turn environment, evaluated through an OpenAI-compatible client.

One rollout is one episode: the model plays the Scientist and the rubric pays its return. The server
is a scripted model behind an httpx transport; point `AsyncOpenAI(base_url=...)` at vLLM or Ollama.
Run: pip install -e '.[verifiers]' && python examples/06_verifiers_env.py
"""

import json
import re

import httpx
import openai
import verifiers as vf

from replicalab.envs.verifiers_env import load_environment
from replicalab.models import Candidates, Paper
from replicalab.power import needed_samples
from replicalab.reading import addresses, read_paper

PLAN = {"action_type": "propose_protocol", "duration_days": 3, "technique": "re-run of the published method"}


def scripted_model(request: httpx.Request) -> httpx.Response:
    """Proposes PLAN, sized for the reported effect, with the elements the reader finds."""
    body = json.loads(request.content)
    latest = body["messages"][-1]["content"]
    agreed = "lab_manager (accept)" in latest or "The revised plan passes every check." in latest
    brief = "\n".join(m["content"] for m in body["messages"])  # the paper, the review, the items
    keys = ("Method", "- elements", "Reported effect size")
    method, listed, effect = (re.search(rf"^{key}: (.*)$", brief, re.M).group(1) for key in keys)
    review = re.search(r'required_review: .*\(term: "(.+?)"\)', brief)
    needs = re.findall(r"^- (.+?) \[(equipment|reagent)\]: .*\(essential\)$", brief, re.M)
    plan = {**PLAN, "controls": ["baseline comparison", review.group(1) if review else "independent review"]}
    plan["sample_size"] = min(100, needed_samples(float(effect)))
    plan["required_equipment"] = [name for name, kind in needs if kind == "equipment"]
    plan["required_reagents"] = [name for name, kind in needs if kind == "reagent"]
    paper = Paper(title="-", hypothesis="-", method=method, key_finding="-")
    plan["elements"] = read_paper(paper, Candidates(elements=listed.split(" | "))).elements
    plan["rationale"] = addresses(plan["elements"])
    text = json.dumps({"action_type": "accept"} if agreed else plan)
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    reply = {"id": "1", "object": "chat.completion", "created": 0, "model": body["model"]}
    reply["choices"] = [choice]
    return httpx.Response(200, json=reply)


env = load_environment("train", templates=["math_reasoning"], num_seeds=2, max_rounds=4)
http = httpx.AsyncClient(transport=httpx.MockTransport(scripted_model))
model = openai.AsyncOpenAI(base_url="http://model.invalid/v1", api_key="unused", http_client=http)
results = env.evaluate_sync(client=vf.OpenAIChatCompletionsClient(model), model="scripted", num_examples=6)
for output in results["outputs"]:
    print(
        f"{output['info']['scenario_id']}: {output['metrics']['num_turns']:.0f} turns, "
        f"return {output['reward']:+.2f}, judge score {output['metrics']['judge_score']:.2f}"
    )
print(f"mean reward {sum(o['reward'] for o in results['outputs']) / len(results['outputs']):+.2f}")

"""What the PyTorch notebooks (05-08) share: tools.py builds their cases (tensors, weights, the
reference's gradients), checks*.py judge them on plain data (diagnosis, module answers, sampling).
The handout ships checks*.py, which import no model answer."""

"""The text and image maskers: their players, masked inputs, games checked against
enumeration and closed forms, their use by Explainer, shapley_values and ProxySPEX, and bad
input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError
from ferroshap.maskers.image import grid_segments

try:
    import torch
except ImportError:
    torch = None

PASSAGE = "The cat sat on the mat. It purred, happily!  Then it slept?"


def brute_force_shapley(game, n: int) -> np.ndarray:
    """Shapley values by the permutation-free subset formula over all 2^n coalitions."""
    masks = np.array(list(itertools.product([False, True], repeat=n)))
    values = dict(zip(map(bytes, masks), game(masks), strict=True))
    phi = np.zeros(n)
    for mask in masks:
        size = int(mask.sum())
        for i in np.flatnonzero(~mask):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            joined = mask.copy()
            joined[i] = True
            phi[i] += weight * (values[bytes(joined)] - values[bytes(mask)])
    return phi


def word_scores(texts: list[str]) -> np.ndarray:
    """An additive model of words: its Shapley values are the scores of the words present."""
    scores = {"cat": 1.0, "mat.": -0.5, "purred,": 2.0, "slept?": 0.25}
    return np.array([sum(scores.get(w, 0.0) for w in t.split()) for t in texts])


class OffsetTokenizer:
    """A stand-in for a Hugging Face fast tokenizer: tokens of at most 3 letters."""

    mask_token = "[MASK]"

    def __call__(self, text: str, add_special_tokens: bool, return_offsets_mapping: bool):
        spans = []
        for start, end in (m.span() for m in __import__("re").finditer(r"\S+", text)):
            spans += [(s, min(s + 3, end)) for s in range(start, end, 3)]
        return {"offset_mapping": [(0, 0), *spans]}  # a special token has an empty span


# -- text --------------------------------------------------------------------------------------


def test_words_sentences_and_tokens() -> None:
    assert fs.maskers.Text().player_names(PASSAGE) == [
        "The", "cat", "sat", "on", "the", "mat.", "It", "purred,", "happily!", "Then", "it",
        "slept?",
    ]  # fmt: skip
    assert fs.maskers.Text(unit="sentence").player_names(PASSAGE) == [
        "The cat sat on the mat.",
        "It purred, happily!",
        "Then it slept?",
    ]
    tokens = fs.maskers.Text(OffsetTokenizer(), unit="token").player_names("kitten sat")
    assert tokens == ["kit", "ten", "sat"]


def test_dropped_and_masked_passages() -> None:
    text = "  a bb, ccc\n"
    drop = fs.maskers.Text()
    assert drop.texts(text, np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 0]], bool)) == [
        "  a ccc\n",
        "  bb, ccc\n",
        "  a bb,\n",
        "  \n",
    ]
    mask = fs.maskers.Text(mode="mask", mask_token="<m>")
    assert mask.texts(text, np.array([[1, 0, 0]], bool)) == ["  a <m> <m>\n"]
    tokens = fs.maskers.Text(OffsetTokenizer(), unit="token", mode="mask")
    assert tokens.texts("kitten", np.array([[False, True]])) == ["[MASK]ten"]


def test_additive_text_model_by_every_engine() -> None:
    """Explainer (exact and auto), shapley_values and ProxySPEX give an additive model's word
    scores, labelled with the words."""
    masker = fs.maskers.Text()
    words = masker.player_names(PASSAGE)
    truth = np.array([word_scores([w])[0] for w in words])
    ex = fs.Explainer(word_scores, masker=masker, method="exact")(PASSAGE)
    assert ex.feature_names == words and ex.values.shape == (1, len(words))
    np.testing.assert_allclose(ex.values[0], truth, atol=1e-12)
    assert ex.base_values[0] == 0.0 and list(ex.data[0]) == words
    auto = fs.Explainer(word_scores, masker=masker, budget=200, seed=0)(PASSAGE)
    np.testing.assert_allclose(auto.values[0], truth, atol=1e-8)
    game, n = masker.game(word_scores, PASSAGE)
    np.testing.assert_allclose(fs.shapley_values(game, n, budget=200), truth, atol=1e-8)
    iv = fs.ProxySPEX(word_scores, masker=masker, budget=300, max_order=2, seed=0).explain(PASSAGE)
    assert iv.feature_names == words
    np.testing.assert_allclose(iv.shapley_values().values[0], truth, atol=1e-6)


def test_text_interactions_match_enumeration() -> None:
    """A model with a word interaction: Explainer's exact values equal brute force."""

    def model(texts: list[str]) -> np.ndarray:
        return np.array([("cat" in t) * ("mat." in t) * 3.0 + ("slept?" in t) for t in texts])

    masker = fs.maskers.Text()
    game, n = masker.game(model, PASSAGE)
    exact = fs.Explainer(model, masker=masker, method="exact")(PASSAGE).values[0]
    np.testing.assert_allclose(exact, brute_force_shapley(game, n), atol=1e-12)


def test_several_outputs_are_all_explained() -> None:
    """A model of two scores (text) or three class scores (image): Explainer explains every
    column, each as the one-output game would."""

    def two(texts: list[str]) -> np.ndarray:
        return np.stack([word_scores(texts), 2.0 * word_scores(texts) + 1.0], axis=1)

    masker = fs.maskers.Text()
    ex = fs.Explainer(two, masker=masker, method="exact")(PASSAGE)
    one = fs.Explainer(word_scores, masker=masker, method="exact")(PASSAGE)
    assert ex.values.shape == (1, 12, 2) and ex.base_values.shape == (1, 2)
    np.testing.assert_allclose(ex.values[0, :, 1], 2.0 * one.values[0], atol=1e-12)
    image = np.random.default_rng(5).random((4, 4))

    def three(images: np.ndarray) -> np.ndarray:
        flat = images.reshape(len(images), -1)
        return np.stack([flat.sum(1), flat[:, :4].prod(1), flat.max(1)], axis=1)

    image_ex = fs.Explainer(three, masker=fs.maskers.Image(2), method="exact")(image)
    assert image_ex.values.shape == (1, 4, 3)
    np.testing.assert_allclose(image_ex.values[0].sum(0), three(image[None])[0] - three(
        np.zeros((1, 4, 4)))[0], atol=1e-12)  # fmt: skip


def test_text_model_calls_are_chunked() -> None:
    calls: list[int] = []

    def model(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return word_scores(texts)

    game, _ = fs.maskers.Text(batch_size=7).game(model, PASSAGE)
    game(np.ones((20, 12), bool))
    assert calls == [7, 7, 6]


def test_text_bad_input() -> None:
    with pytest.raises(InvalidArgumentError, match="no words"):
        fs.maskers.Text().game(word_scores, "   ")
    with pytest.raises(InvalidTypeError, match="x must be a string"):
        fs.maskers.Text().game(word_scores, ["a", "b"])
    with pytest.raises(InvalidArgumentError, match="unit must be one of"):
        fs.maskers.Text(unit="letter")
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        fs.maskers.Text(mode="blank")
    with pytest.raises(InvalidArgumentError, match="unit='token' needs"):
        fs.maskers.Text(unit="token")
    with pytest.warns(UserWarning, match="dropped instead"):
        masker = fs.maskers.Text(object(), mode="mask")
    assert masker.mode == "drop"
    with pytest.raises(InvalidArgumentError, match=r"one value per masked input.*output_index"):
        fs.ProxySPEX(lambda texts: np.ones((len(texts), 2)), masker=fs.maskers.Text()).explain(
            PASSAGE
        )
    with pytest.raises(InvalidArgumentError, match="background cannot be combined"):
        fs.Explainer(word_scores, np.zeros((1, 3)), masker=fs.maskers.Text())
    with pytest.raises(InvalidArgumentError, match="background is required"):
        fs.Explainer(word_scores)


# -- images ------------------------------------------------------------------------------------


def pixel_sum(images: np.ndarray) -> np.ndarray:
    return images.reshape(len(images), -1).sum(axis=1)


def test_grid_patches_and_segments() -> None:
    labels = grid_segments(5, 5, 2)  # 2 x 2 patches that do not tile: the last ones smaller
    assert labels.max() == 8 and (labels == 8).sum() == 1 and (labels == 0).sum() == 4
    masker = fs.maskers.Image(patch_size=(2, 3))
    assert masker.player_names(np.zeros((4, 6))) == ["patch 0,0", "patch 0,1", "patch 1,0",
                                                      "patch 1,1"]  # fmt: skip
    segments = np.array([[5, 5, 9], [5, 7, 9]])
    masker = fs.maskers.Image(segments=segments)
    assert masker.player_names(np.zeros((2, 3))) == ["segment 5", "segment 7", "segment 9"]
    game, n = masker.game(pixel_sum, np.arange(6.0).reshape(2, 3))
    assert n == 3
    np.testing.assert_allclose(game(np.array([[True, False, False], [False, True, True]])),
                               [0 + 1 + 3, 4 + 2 + 5])  # fmt: skip


def test_image_shapley_values_are_patch_sums() -> None:
    """For an additive model (the pixel sum) a patch's value is its pixels' sum minus the
    fill's; channels (last or first) belong to their pixel's patch."""
    rng = np.random.default_rng(0)
    image = rng.random((6, 6, 3))
    ex = fs.Explainer(pixel_sum, masker=fs.maskers.Image(3, fill=0.5), method="exact")(image)
    truth = (image - 0.5).reshape(2, 3, 2, 3, 3).sum(axis=(1, 3, 4)).ravel()
    np.testing.assert_allclose(ex.values[0], truth, atol=1e-12)
    first = fs.maskers.Image(3, fill=0.5, channel_axis=0)
    chw = fs.Explainer(pixel_sum, masker=first, method="exact")(image.transpose(2, 0, 1))
    np.testing.assert_allclose(chw.values[0], truth, atol=1e-12)


def test_image_fills() -> None:
    """Blur and mean fills, and background images averaged over (the interventional game)."""
    rng = np.random.default_rng(1)
    image = rng.random((4, 4))

    def squared(images: np.ndarray) -> np.ndarray:
        return (images.reshape(len(images), -1) ** 2).sum(axis=1)

    backgrounds = rng.random((3, 4, 4))
    game, n = fs.maskers.Image(2, fill=backgrounds).game(squared, image)
    mask = np.array([[True, False, False, True]])
    keep = np.kron(np.array([[1, 0], [0, 1]]), np.ones((2, 2))).astype(bool)
    expected = np.mean([squared(np.where(keep, image, b)[None])[0] for b in backgrounds])
    np.testing.assert_allclose(game(mask), [expected])
    game, _ = fs.maskers.Image(2, fill="mean").game(squared, image)
    np.testing.assert_allclose(game(np.zeros((1, n), bool)), [16 * image.mean() ** 2])
    game, _ = fs.maskers.Image(2, fill="blur", blur_sigma=1.0).game(squared, image)
    assert 0 < game(np.zeros((1, n), bool))[0] < squared(image[None])[0]


def test_image_interactions_match_enumeration() -> None:
    """A non-additive model: exact values equal brute force, and ProxySPEX labels the patches."""

    def model(images: np.ndarray) -> np.ndarray:
        flat = images.reshape(len(images), -1)
        return np.tanh(flat[:, :8].sum(axis=1)) * flat[:, -4:].mean(axis=1)

    image = np.random.default_rng(2).random((4, 4))
    masker = fs.maskers.Image(2)
    game, n = masker.game(model, image)
    exact = fs.Explainer(model, masker=masker, method="exact")(image).values[0]
    np.testing.assert_allclose(exact, brute_force_shapley(game, n), atol=1e-12)
    big = np.random.default_rng(3).random((8, 8))
    iv = fs.ProxySPEX(model, masker=masker, budget=600, seed=0).explain(big)
    assert iv.feature_names == masker.player_names(big) and len(iv.feature_names) == 16
    big_game, _ = masker.game(model, big)
    held_out = np.random.default_rng(4).random((200, 16)) < 0.5
    assert iv.faithfulness(big_game, held_out) > 0.9


def test_image_bad_input() -> None:
    with pytest.raises(InvalidArgumentError, match="exceeds the 4 x 4 pixels of the image x"):
        fs.maskers.Image(5).game(pixel_sum, np.zeros((4, 4)))
    with pytest.raises(InvalidArgumentError, match="patch_size must be"):
        fs.maskers.Image((2, 0))
    with pytest.raises(InvalidArgumentError, match=r"x must be an image array"):
        fs.maskers.Image(2).game(pixel_sum, np.zeros(16))
    with pytest.raises(InvalidArgumentError, match="segments has shape"):
        fs.maskers.Image(segments=np.zeros((3, 3), int)).game(pixel_sum, np.zeros((4, 4)))
    with pytest.raises(InvalidArgumentError, match="fill images must have shape"):
        fs.maskers.Image(2, fill=np.zeros((2, 3, 3))).game(pixel_sum, np.zeros((4, 4)))
    with pytest.raises(InvalidArgumentError, match="fill must be"):
        fs.maskers.Image(2, fill="noise")


@pytest.mark.torch
@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_image_torch_module() -> None:
    """A torch module gets tensors in its dtype; a tensor image stays a tensor."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 1)).double()
    image = np.random.default_rng(3).random((4, 4))
    masker = fs.maskers.Image(2)
    from_numpy = fs.Explainer(net, masker=masker, method="exact")(image).values[0]

    def tensor_model(batch):
        assert isinstance(batch, torch.Tensor)
        return net(batch)[:, 0]

    from_tensor = fs.Explainer(tensor_model, masker=masker, method="exact")(torch.tensor(image))
    np.testing.assert_allclose(from_tensor.values[0], from_numpy, atol=1e-12)
    weights = net[1].weight.detach().numpy().reshape(4, 4)
    patch = (weights * image).reshape(2, 2, 2, 2).sum(axis=(1, 3)).ravel()
    np.testing.assert_allclose(from_numpy, patch, atol=1e-10)

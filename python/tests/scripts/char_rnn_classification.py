"""PyTorch's tutorial "NLP From Scratch: Classifying Names with a Character-Level RNN" (the
original version): one-hot letter tensors built by item assignment, an RNN cell written by
hand with nn.Linear over torch.cat((input, hidden), 1) and LogSoftmax, NLLLoss, manual SGD
updates with p.data.add_(p.grad.data, alpha=-learning_rate), topk for the guess, random
training examples, a confusion matrix normalised per row. 'Languages': made-up name styles."""
from __future__ import unicode_literals, print_function, division
import math
import os
import random
import string
import time
import unicodedata

import anygrad as torch                    # was: import torch
import anygrad.nn as nn                    # was: import torch.nn as nn

device = os.environ.get("DEVICE", "cpu")  # the tutorial runs on the CPU
random.seed(0)
torch.manual_seed(0)

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)


def unicodeToAscii(s):
    return ''.join(
        c for c in unicodedata.normalize('NFD', s)
        if unicodedata.category(c) != 'Mn'
        and c in all_letters
    )


def make_names():
    styles = {
        "Endsko": (list("bdgkmnrtv"), list("aeiou"), "sko"),
        "Ellian": (list("lmnrsth"), list("aeiy"), "ellian"),
        "Zurov": (list("zvkrtdh"), list("ou"), "ov"),
        "Quiño": (list("qcmnpl"), list("iaoé"), "iño"),
    }
    names = {}
    for category, (consonants, vowels, suffix) in styles.items():
        names[category] = []
        for _ in range(200):
            stem = "".join(random.choice(consonants) + random.choice(vowels) for _ in range(random.randint(1, 2)))
            names[category].append(unicodeToAscii((stem + suffix).capitalize()))
    return names


category_lines = make_names()
all_categories = list(category_lines.keys())
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()

        self.hidden_size = hidden_size

        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


n_hidden = 128
rnn = RNN(n_letters, n_hidden, n_categories)

input = letterToTensor('A')
hidden = torch.zeros(1, n_hidden)
output, next_hidden = rnn(input, hidden)
print(output)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def randomChoice(l):
    return l[random.randint(0, len(l) - 1)]


def randomTrainingExample():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


criterion = nn.NLLLoss()
learning_rate = 0.005


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()

    rnn.zero_grad()

    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)

    loss = criterion(output, category_tensor)
    loss.backward()

    # Add parameters' gradients to their values, multiplied by learning rate
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)

    return output, loss.item()


n_iters = 3000
print_every = 500
current_loss = 0
all_losses = []


def timeSince(since):
    now = time.time()
    s = now - since
    m = math.floor(s / 60)
    s -= m * 60
    return '%dm %ds' % (m, s)


start = time.time()
for iter in range(1, n_iters + 1):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
    current_loss += loss

    if iter % print_every == 0:
        guess, guess_i = categoryFromOutput(output)
        correct = '✓' if guess == category else '✗ (%s)' % category
        print('%d %d%% (%s) %.4f %s / %s %s' % (iter, iter / n_iters * 100, timeSince(start), loss, line, guess, correct))
        all_losses.append(current_loss / print_every)
        current_loss = 0

confusion = torch.zeros(n_categories, n_categories)
n_confusion = 400


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


with torch.no_grad():
    for i in range(n_confusion):
        category, line, category_tensor, line_tensor = randomTrainingExample()
        output = evaluate(line_tensor)
        guess, guess_i = categoryFromOutput(output)
        category_i = all_categories.index(category)
        confusion[category_i][guess_i] += 1

for i in range(n_categories):
    confusion[i] = confusion[i] / confusion[i].sum()
accuracy = confusion.diag().mean().item()
print(confusion)
print(f"mean per-class accuracy {accuracy:.3f}")
assert all_losses[-1] < all_losses[0]
assert accuracy > 0.8, accuracy

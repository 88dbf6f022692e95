"""A text classifier over variable-length sequences: a vocabulary built from tokenized text, a
Dataset returning (ids, label), a collate_fn that pads with pad_sequence and keeps the lengths,
an Embedding with padding_idx, a bidirectional GRU fed a PackedSequence
(pack_padded_sequence with enforce_sorted=False), pad_packed_sequence back, the final forward
and backward hidden states concatenated, dropout, CrossEntropyLoss, Adam. The classes: whether
'good' words outnumber 'bad' ones in the sentence."""
import os
import random
import time

import anygrad as torch                                        # was: import torch
import anygrad.nn as nn                                        # was: import torch.nn as nn
from anygrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from anygrad.utils.data import DataLoader, Dataset

device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
torch.manual_seed(1234)
random.seed(1234)

GOOD = ["great", "excellent", "fun", "wonderful", "superb"]
BAD = ["awful", "boring", "terrible", "dull", "poor"]
FILLER = ["the", "movie", "was", "and", "plot", "acting", "a", "very", "it", "story", "but", "quite"]


def make_sentence():
    words = [random.choice(FILLER) for _ in range(random.randint(3, 14))]
    goods, bads = random.randint(0, 3), random.randint(0, 3)
    while goods == bads:
        bads = random.randint(0, 3)
    for w in [random.choice(GOOD) for _ in range(goods)] + [random.choice(BAD) for _ in range(bads)]:
        words.insert(random.randint(0, len(words)), w)
    return " ".join(words), int(goods > bads)


class Vocab:
    def __init__(self, sentences, specials=("<pad>", "<unk>")):
        self.itos = list(specials)
        for sentence in sentences:
            for token in sentence.split():
                if token not in self.itos:
                    self.itos.append(token)
        self.stoi = {token: index for index, token in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(token, self.stoi["<unk>"]) for token in tokens]


class ReviewDataset(Dataset):
    def __init__(self, samples, vocab):
        self.samples = samples
        self.vocab = vocab

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        text, label = self.samples[idx]
        return torch.tensor(self.vocab(text.split()), dtype=torch.long), label


def collate_batch(batch):
    texts, labels = zip(*batch)
    lengths = torch.tensor([len(t) for t in texts], dtype=torch.int64)
    padded = pad_sequence(list(texts), batch_first=True, padding_value=PAD_IDX)
    return padded, lengths, torch.tensor(labels, dtype=torch.int64)


class RNNClassifier(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers, bidirectional, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.rnn = nn.GRU(embedding_dim, hidden_dim, num_layers=n_layers, bidirectional=bidirectional,
                          dropout=dropout if n_layers > 1 else 0.0, batch_first=True)
        self.fc = nn.Linear(hidden_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        # text = [batch size, sent len]
        embedded = self.dropout(self.embedding(text))
        packed_embedded = pack_padded_sequence(embedded, text_lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_output, hidden = self.rnn(packed_embedded)
        output, output_lengths = pad_packed_sequence(packed_output, batch_first=True)
        # output = [batch size, sent len, hid dim * num directions]; padding positions are zero
        assert output.shape[1] == int(text_lengths.max())
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        return self.fc(hidden)


train_samples = [make_sentence() for _ in range(1200)]
test_samples = [make_sentence() for _ in range(300)]
vocab = Vocab([s for s, _ in train_samples])
PAD_IDX = vocab.stoi["<pad>"]

train_loader = DataLoader(ReviewDataset(train_samples, vocab), batch_size=64, shuffle=True, collate_fn=collate_batch)
test_loader = DataLoader(ReviewDataset(test_samples, vocab), batch_size=128, shuffle=False, collate_fn=collate_batch)

model = RNNClassifier(len(vocab), 24, 32, 2, n_layers=1, bidirectional=True, dropout=0.2, pad_idx=PAD_IDX).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss().to(device)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


print(f'The model has {count_parameters(model):,} trainable parameters')


def binary_accuracy(preds, y):
    correct = (preds.argmax(1) == y).float()
    return correct.sum() / len(correct)


def train(model, iterator, optimizer, criterion):
    epoch_loss = 0
    epoch_acc = 0
    model.train()
    for text, text_lengths, label in iterator:
        text, label = text.to(device), label.to(device)
        optimizer.zero_grad()
        predictions = model(text, text_lengths)
        loss = criterion(predictions, label)
        acc = binary_accuracy(predictions, label)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
        epoch_acc += acc.item()
    return epoch_loss / len(iterator), epoch_acc / len(iterator)


def evaluate(model, iterator, criterion):
    epoch_loss = 0
    epoch_acc = 0
    model.eval()
    with torch.no_grad():
        for text, text_lengths, label in iterator:
            text, label = text.to(device), label.to(device)
            predictions = model(text, text_lengths)
            loss = criterion(predictions, label)
            acc = binary_accuracy(predictions, label)
            epoch_loss += loss.item()
            epoch_acc += acc.item()
    return epoch_loss / len(iterator), epoch_acc / len(iterator)


N_EPOCHS = 6
best_valid_loss = float('inf')
for epoch in range(N_EPOCHS):
    start_time = time.time()
    train_loss, train_acc = train(model, train_loader, optimizer, criterion)
    valid_loss, valid_acc = evaluate(model, test_loader, criterion)
    end_time = time.time()
    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), 'packed-gru-model.pt')
    print(f'Epoch: {epoch+1:02} | Epoch Time: {end_time - start_time:.2f}s')
    print(f'\tTrain Loss: {train_loss:.3f} | Train Acc: {train_acc*100:.2f}%')
    print(f'\t Val. Loss: {valid_loss:.3f} |  Val. Acc: {valid_acc*100:.2f}%')

model.load_state_dict(torch.load('packed-gru-model.pt'))
test_loss, test_acc = evaluate(model, test_loader, criterion)
print(f'Test Loss: {test_loss:.3f} | Test Acc: {test_acc*100:.2f}%')
assert test_acc > 0.85, test_acc

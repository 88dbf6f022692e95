"""PyTorch's tutorial "Transfer Learning for Computer Vision" shape: a torchvision ResNet-18
(weights=None here: nothing is downloaded) with its fc replaced by nn.Linear(num_ftrs, 2), a
train and a val phase per epoch with torch.set_grad_enabled(phase == 'train'),
running_corrects += torch.sum(preds == labels.data), epoch_acc = running_corrects.double() /
size, the best weights kept with copy.deepcopy(model.state_dict()), SGD with momentum and
StepLR; then the 'fixed feature extractor' variant with requires_grad = False on the
backbone. Data: 32x32 images of two classes through transforms.Compose with
RandomHorizontalFlip, ToTensor and Normalize in a Dataset over numpy arrays."""
import copy
import os
import time

import numpy as np
import anygrad as torch                                   # was: import torch
import anygrad.nn as nn                                   # was: import torch.nn as nn
import anygrad.optim as optim                             # was: import torch.optim as optim
from anygrad.optim import lr_scheduler                    # was: from torch.optim import lr_scheduler
from anygrad.vision import models, transforms             # was: from torchvision import models, transforms
from anygrad.utils.data import Dataset, DataLoader

device = torch.device(os.environ.get("DEVICE", "cuda:0" if torch.cuda.is_available() else "cpu"))
torch.manual_seed(0)
rng = np.random.RandomState(0)


class TwoClassImages(Dataset):
    """Ants are reddish blobs, bees are yellow stripes: HWC uint8 arrays."""

    def __init__(self, count, transform):
        self.transform = transform
        self.labels = rng.randint(0, 2, size=count)
        self.images = []
        for label in self.labels:
            image = rng.randint(0, 80, size=(32, 32, 3)).astype(np.uint8)
            if label == 0:
                y, x = rng.randint(8, 24, size=2)
                image[y - 6:y + 6, x - 6:x + 6, 0] = 200
            else:
                image[::4, :, 0] = 220
                image[::4, :, 1] = 220
            self.images.append(image)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return self.transform(self.images[idx]), int(self.labels[idx])


data_transforms = {
    'train': transforms.Compose([
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    ]),
    'val': transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    ]),
}
image_datasets = {'train': TwoClassImages(96, data_transforms['train']), 'val': TwoClassImages(48, data_transforms['val'])}
dataloaders = {x: DataLoader(image_datasets[x], batch_size=16, shuffle=True, num_workers=2) for x in ['train', 'val']}
dataset_sizes = {x: len(image_datasets[x]) for x in ['train', 'val']}
class_names = ['ants', 'bees']


def train_model(model, criterion, optimizer, scheduler, num_epochs=25):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0

    for epoch in range(num_epochs):
        print(f'Epoch {epoch}/{num_epochs - 1}')
        print('-' * 10)

        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()
            else:
                model.eval()

            running_loss = 0.0
            running_corrects = 0

            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)

                optimizer.zero_grad()

                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)

                    if phase == 'train':
                        loss.backward()
                        optimizer.step()

                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]

            print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')

            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

        print()

    time_elapsed = time.time() - since
    print(f'Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s')
    print(f'Best val Acc: {best_acc:4f}')

    model.load_state_dict(best_model_wts)
    return model, best_acc


model_ft = models.resnet18(weights=None)
num_ftrs = model_ft.fc.in_features
model_ft.fc = nn.Linear(num_ftrs, 2)
model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.001, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
model_ft, best_acc = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=4)
assert best_acc > 0.85, best_acc

# ConvNet as fixed feature extractor
model_conv = models.resnet18(weights=None)
for param in model_conv.parameters():
    param.requires_grad = False
num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, 2)
model_conv = model_conv.to(device)
optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.001, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)
before = copy.deepcopy(model_conv.layer1[0].conv1.weight.detach())
model_conv, _ = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, num_epochs=1)
assert torch.equal(before, model_conv.layer1[0].conv1.weight.detach())
trainable = sum(p.numel() for p in model_conv.parameters() if p.requires_grad)
assert trainable == num_ftrs * 2 + 2, trainable

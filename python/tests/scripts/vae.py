"""PyTorch's VAE example (fc encoder, reparameterisation, BCE + KL, Adam, sampling with
no_grad, save_image) on synthetic 28x28 'images': blurred blobs in [0, 1]."""
import argparse
import os

import anygrad as torch                    # was: import torch
import anygrad.utils.data                  # was: import torch.utils.data
from anygrad import nn, optim              # was: from torch import nn, optim
from anygrad.nn import functional as F     # was: from torch.nn import functional as F
from anygrad.vision.utils import save_image  # was: from torchvision.utils import save_image

parser = argparse.ArgumentParser(description='VAE MNIST Example')
parser.add_argument('--batch-size', type=int, default=64)
parser.add_argument('--epochs', type=int, default=4)
parser.add_argument('--seed', type=int, default=1)
parser.add_argument('--log-interval', type=int, default=5)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))


def blobs(count):
    ys = torch.arange(28).float().view(1, 28, 1)
    xs = torch.arange(28).float().view(1, 1, 28)
    cy = torch.randint(6, 22, (count, 1, 1)).float()
    cx = torch.randint(6, 22, (count, 1, 1)).float()
    image = torch.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / 18.0)
    return image.unsqueeze(1).clamp(0, 1)


train_images = blobs(1024)
test_images = blobs(256)
kwargs = {'num_workers': 1, 'pin_memory': True} if device.type == "cuda" else {}
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(train_images, torch.zeros(1024)), batch_size=args.batch_size, shuffle=True, **kwargs)
test_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(test_images, torch.zeros(256)), batch_size=args.batch_size, shuffle=False, **kwargs)


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    # see Appendix B from VAE paper: Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader),
                loss.item() / len(data)))

    print('====> Epoch: {} Average loss: {:.4f}'.format(
          epoch, train_loss / len(train_loader.dataset)))


def test(epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n],
                                      recon_batch.view(args.batch_size, 1, 28, 28)[:n]])
                save_image(comparison.cpu(),
                           'vae_reconstruction_' + str(epoch) + '.png', nrow=n)

    test_loss /= len(test_loader.dataset)
    print('====> Test set loss: {:.4f}'.format(test_loss))
    return test_loss


if __name__ == "__main__":
    first = None
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test_loss = test(epoch)
        first = test_loss if first is None else first
        with torch.no_grad():
            sample = torch.randn(64, 20).to(device)
            sample = model.decode(sample).cpu()
            save_image(sample.view(64, 1, 28, 28),
                       'vae_sample_' + str(epoch) + '.png')
    # The blobs have about 91 nats of binary entropy per image; 543 is the loss of a constant 0.5.
    assert test_loss < 190, test_loss
